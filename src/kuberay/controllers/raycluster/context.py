"""What every step of a RayCluster reconcile shares: where it reads (caches), where it writes (the
client), whom it tells (the Event recorder), what it remembers (scale expectations), and the operator's
options that shape it.

Reads of owned kinds (Pods, Services, Secrets, PVCs, Jobs) come from the informers' caches; kinds the
controller does not watch (Ingress, Route, RBAC objects) are read with the client, as upstream reads them.
All writes go through the client. One `Context` per controller; it holds no per-reconcile state.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature, FeatureGates
from kuberay.builders.pod import PodOptions
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.events import EventRecorder
from kuberay.runtime.expectations import ScaleExpectations
from kuberay.runtime.resources import Resource

RAYCLUSTER = Resource(constants.API_VERSION, "RayCluster", "rayclusters")
ROUTE = Resource("route.openshift.io/v1", "Route", "routes")
RECORDER_NAME = "raycluster-controller"
DEFAULT_REQUEUE_SECONDS = 300.0
SHORT_REQUEUE_SECONDS = 2.0  # upstream's DefaultRequeueDuration
HEAD_TERMINATION_REQUEUE_SECONDS = 10.0
DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS = 300


def _on_unless_false(value: str | None) -> bool:
    return (value or "").lower() != "false"


def _on_if_true(value: str | None) -> bool:
    return (value or "").lower() == "true"


@dataclass(frozen=True)
class ClusterOptions:
    """The operator's environment and configuration as the RayCluster controller reads them (spec §6.3)."""

    gates: FeatureGates = field(default_factory=FeatureGates)
    pods: PodOptions = field(default_factory=PodOptions)
    requeue_seconds: float = DEFAULT_REQUEUE_SECONDS  # RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV
    random_pod_delete: bool = False  # ENABLE_RANDOM_POD_DELETE
    gcs_ft_redis_cleanup: bool = True  # ENABLE_GCS_FT_REDIS_CLEANUP
    cluster_ip_head_service: bool = False  # ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE
    use_ingress_on_openshift: bool = False  # USE_INGRESS_ON_OPENSHIFT
    # cert-manager.io/v1 available: always False, as the mTLS controller that would ask cert-manager for
    # the certificates is not part of this operator (mTLS clusters are refused with upstream's message).
    cert_manager: bool = False

    @property
    def conditions_enabled(self) -> bool:
        return self.gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)

    @classmethod
    def from_environ(
        cls,
        gates: FeatureGates,
        pod_options: Mapping[str, Any],
        environ: Mapping[str, str] | None = None,
        **others: Any,
    ) -> ClusterOptions:
        """Options from the operator's environment variables (upstream's names and parsing rules);
        `pod_options` are the configuration file's PodOptions fields."""
        env = os.environ if environ is None else environ
        try:
            requeue = float(int(env.get("RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV", "")))
        except ValueError:
            requeue = DEFAULT_REQUEUE_SECONDS
        pods = PodOptions(
            feature_gates=gates,
            cluster_domain=env.get("CLUSTER_DOMAIN") or constants.DEFAULT_CLUSTER_DOMAIN,
            deterministic_head_pod_name=_on_if_true(env.get("ENABLE_DETERMINISTIC_HEAD_POD_NAME")),
            init_container_injection=_on_unless_false(env.get("ENABLE_INIT_CONTAINER_INJECTION")),
            probes_injection=_on_unless_false(env.get("ENABLE_PROBES_INJECTION")),
            login_shell=_on_if_true(env.get("ENABLE_LOGIN_SHELL")),
            **pod_options,
        )
        return cls(
            gates=gates,
            pods=pods,
            requeue_seconds=requeue,
            random_pod_delete=_on_if_true(env.get("ENABLE_RANDOM_POD_DELETE")),
            gcs_ft_redis_cleanup=_on_unless_false(env.get("ENABLE_GCS_FT_REDIS_CLEANUP")),
            cluster_ip_head_service=_on_if_true(env.get("ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE")),
            use_ingress_on_openshift=_on_if_true(env.get("USE_INGRESS_ON_OPENSHIFT")),
            **others,
        )


@dataclass
class Context:
    client: Client
    clusters: Store
    pods: Store
    services: Store
    jobs: Store
    recorder: EventRecorder | None
    expectations: ScaleExpectations
    clock: Clock
    options: ClusterOptions
    # Whether the server serves OpenShift Routes; found out on first need (None until then).
    openshift: bool | None = None

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str = "") -> None:
        if self.recorder is not None:
            self.recorder.record(obj, type, reason, message, action)
