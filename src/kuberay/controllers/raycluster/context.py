"""What every step of a RayCluster reconcile shares: where it reads (caches), where it writes (the
client), whom it tells (the Event recorder), what it remembers (scale expectations), and the operator's
options that shape it.

Reads of owned kinds (Pods, Services, Secrets, PVCs, Jobs, and with the RayClusterMTLS gate cert-manager's
Certificates and Issuers) come from the informers' caches; kinds the controller does not watch (Ingress,
Route, RBAC objects) are read with the client, as upstream reads them.
All writes go through the client. One `Context` per controller; it holds no per-reconcile state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kuberay.api.config import Configuration
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.settings import OperatorSettings, PodEnvironment, RayClusterEnvironment
from kuberay.builders.pod import PodOptions
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.events import EventRecorder
from kuberay.runtime.expectations import ScaleExpectations
from kuberay.runtime.resources import Resource
from kuberay.schedulers.interface import BatchScheduler

ROUTE = Resource("route.openshift.io/v1", "Route", "routes")
RECORDER_NAME = "raycluster-controller"
SHORT_REQUEUE_SECONDS = 2.0  # upstream's DefaultRequeueDuration
HEAD_TERMINATION_REQUEUE_SECONDS = 10.0
DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS = 300


def pod_options(gates: FeatureGates, env: PodEnvironment, config: Configuration) -> PodOptions:
    """What shapes every pod: the pod environment variables and the configuration file's pod fields."""
    return PodOptions(
        feature_gates=gates,
        cluster_domain=env.cluster_domain,
        deterministic_head_pod_name=env.deterministic_head_pod_name,
        init_container_injection=env.init_container_injection,
        probes_injection=env.probes_injection,
        login_shell=env.login_shell,
        default_container_envs=tuple(config.default_container_envs or ()),
        head_sidecar_containers=tuple(config.head_sidecar_containers or ()),
        worker_sidecar_containers=tuple(config.worker_sidecar_containers or ()),
        default_pod_annotations=dict(config.default_pod_annotations or {}),
        default_pod_labels=dict(config.default_pod_labels or {}),
    )


@dataclass(frozen=True)
class ClusterOptions:
    """The operator's settings as the RayCluster controller reads them (upstream's
    `RayClusterReconcilerOptions`); the environment variables' names, defaults and rules are in
    `kuberay.api.settings`."""

    gates: FeatureGates = field(default_factory=FeatureGates)
    pods: PodOptions = field(default_factory=PodOptions)
    env: RayClusterEnvironment = field(default_factory=RayClusterEnvironment)
    cluster_ip_head_service: bool = False  # ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE
    # ENABLE_WEBHOOKS: Node Label Delivery's labels reach a pod only through the operator's webhooks.
    webhooks: bool = False

    @property
    def conditions_enabled(self) -> bool:
        return self.gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)

    @classmethod
    def from_settings(cls, settings: OperatorSettings) -> ClusterOptions:
        environment = settings.environment
        return cls(
            gates=settings.feature_gates,
            pods=pod_options(settings.feature_gates, environment.pods, settings.config),
            env=environment.raycluster,
            cluster_ip_head_service=environment.pods.cluster_ip_head_service,
            webhooks=environment.webhook.enabled,
        )


@dataclass
class Context:
    client: Client
    clusters: Store
    pods: Store
    services: Store
    jobs: Store
    secrets: Store
    pvcs: Store
    recorder: EventRecorder | None
    expectations: ScaleExpectations
    clock: Clock
    options: ClusterOptions
    # The operator's batch-scheduler plugin (the no-op default when none is configured).
    scheduler: BatchScheduler = field(default_factory=BatchScheduler)
    # Whether the server serves OpenShift Routes; found out on first need (None until then).
    openshift: bool | None = None
    # cert-manager's kinds, cached with the RayClusterMTLS gate on (empty otherwise), and whether their
    # informers found cert-manager.io/v1 served (None: not asked, as with the gate off).
    certificates: Store = field(default_factory=Store)
    issuers: Store = field(default_factory=Store)
    cert_manager_served: Callable[[], bool | None] = lambda: None
    # That answer as the reconciles last used it (`mtls.cert_manager_installed`), to log each change once.
    cert_manager: bool | None = None

    def event(
        self, obj: RayCluster | Mapping[str, Any], type: str, reason: str, message: str, action: str = ""
    ) -> None:
        """Records an Event about `obj` (a RayCluster, or the wire form of any object)."""
        if self.recorder is None:
            return
        if isinstance(obj, RayCluster):
            metadata = obj.metadata
            obj = {
                "apiVersion": obj.api_version,
                "kind": obj.kind,
                "metadata": {
                    "name": obj.name,
                    "namespace": obj.namespace,
                    "uid": metadata.uid or "",
                    "resourceVersion": metadata.resource_version or "",
                },
            }
        self.recorder.record(obj, type, reason, message, action)
