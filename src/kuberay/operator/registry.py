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
from kuberay.api.settings import OperatorSettings
from kuberay.controllers import networkpolicy, unhandled
from kuberay.controllers.nodeevents import setup as nodeevents_setup
from kuberay.controllers.raycluster import setup as raycluster_setup
from kuberay.controllers.raycronjob import setup as raycronjob_setup
from kuberay.controllers.rayjob import setup as rayjob_setup
from kuberay.controllers.rayservice import setup as rayservice_setup
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import JOB, POD, Resource


def _always(settings: OperatorSettings) -> bool:
    return True


@dataclass(frozen=True)
class ControllerSetup:
    name: str
    # Adds the controller to the manager; what it returns (its reconciler, say) is not used.
    install: Callable[[Manager, OperatorSettings], object]
    enabled: Callable[[OperatorSettings], bool] = _always


def _network_policy_gate(settings: OperatorSettings) -> bool:
    return settings.feature_gates.enabled(Feature.RAY_CLUSTER_NETWORK_POLICY)


# The RayCluster, RayJob, RayService and RayCronJob controllers plug in here, before "unhandled": it
# warns about the ray.io kinds that no controller installed before it reconciles.
BUILTIN: tuple[ControllerSetup, ...] = (
    ControllerSetup("raycluster", raycluster_setup.install),
    ControllerSetup("rayjob", rayjob_setup.install),
    ControllerSetup("rayservice", rayservice_setup.install),
    ControllerSetup("raycronjob", raycronjob_setup.install, raycronjob_setup.enabled),
    ControllerSetup("networkpolicy", networkpolicy.install, _network_policy_gate),
    ControllerSetup("node-event-forwarder", nodeevents_setup.install, nodeevents_setup.enabled),
    ControllerSetup("unhandled", unhandled.install),
)

# Upstream's manager cache selectors: only the pods and batch Jobs the operator manages are cached, so
# memory grows with what it owns rather than with the cluster.
CACHE_SELECTORS: Mapping[Resource, str] = {
    POD: "ray.io/node-type in (head,worker,redis-cleanup)",
    JOB: "app.kubernetes.io/created-by=kuberay-operator",
}
