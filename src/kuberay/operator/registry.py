"""The controllers the operator can run, and the cache selectors of the kinds they own.

A `ControllerSetup` installs one controller into the manager (building its reconciler from the settings
and registering its watches) when `enabled` says so (a feature gate, a flag). `BUILTIN` is the list the
`kuberay-operator` command runs; tests pass their own list to `kuberay.operator.main.run`. Nothing here
is global state: the list is passed explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kuberay.api.features import Feature
from kuberay.controllers import networkpolicy
from kuberay.controllers.raycluster import setup as raycluster_setup
from kuberay.controllers.rayjob import setup as rayjob_setup
from kuberay.operator.settings import OperatorSettings
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import JOB, POD, Resource


def _always(settings: OperatorSettings) -> bool:
    return True


@dataclass(frozen=True)
class ControllerSetup:
    name: str
    install: Callable[[Manager, OperatorSettings], None]
    enabled: Callable[[OperatorSettings], bool] = _always


def _install_raycluster(manager: Manager, settings: OperatorSettings) -> None:
    raycluster_setup.install(manager, settings.config, settings.feature_gates)


def _install_rayjob(manager: Manager, settings: OperatorSettings) -> None:
    rayjob_setup.install(manager, settings.config, settings.feature_gates, kubeconfig=settings.kubeconfig)


def _install_networkpolicy(manager: Manager, settings: OperatorSettings) -> None:
    networkpolicy.install(manager, settings.config.reconcile_concurrency)


def _network_policy_gate(settings: OperatorSettings) -> bool:
    return settings.feature_gates.enabled(Feature.RAY_CLUSTER_NETWORK_POLICY)


# The RayCluster, RayJob, RayService and RayCronJob controllers plug in here.
BUILTIN: tuple[ControllerSetup, ...] = (
    ControllerSetup("raycluster", _install_raycluster),
    ControllerSetup("rayjob", _install_rayjob),
    ControllerSetup("networkpolicy", _install_networkpolicy, _network_policy_gate),
)

# Upstream's manager cache selectors: only the pods and batch Jobs the operator manages are cached, so
# memory grows with what it owns rather than with the cluster.
CACHE_SELECTORS: Mapping[Resource, str] = {
    POD: "ray.io/node-type in (head,worker,redis-cleanup)",
    JOB: "app.kubernetes.io/created-by=kuberay-operator",
}
