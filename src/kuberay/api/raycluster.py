"""The ray.io/v1 RayCluster: `RayClusterSpec` (shared by RayJob, RayService and RayCronJob), every nested
type, `RayClusterStatus`, and the vocabularies of its status.

Class names are upstream's Go type names; attributes are snake_case with upstream's JSON names as aliases.
Fields constrained by a CRD `enum` are `Literal`s; vocabularies the CRD leaves open (cluster state,
condition types and reasons) are `StrEnum`s whose members compare equal to the plain strings stored in
`str` fields, so a value written by a newer client still parses.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from kuberay.api.base import Int32, Int64, KubeModel, OpenAPI, Quantity, Required, Rule, Time
from kuberay.api.meta import (
    CONDITIONS_LIST,
    Condition,
    EnvFromSource,
    EnvVar,
    EnvVarSource,
    IngressTLS,
    KubeObject,
    NetworkPolicyEgressRule,
    NetworkPolicyIngressRule,
    PodTemplateSpec,
    ResourceRequirements,
    SecurityContext,
    Service,
    VolumeMount,
)

# --- Closed vocabularies (CRD enums) ------------------------------------------------------------------------
RayClusterUpgradeType = Literal["Recreate", "None"]
AuthMode = Literal["disabled", "token"]
GcsFaultToleranceBackend = Literal["redis", "rocksdb"]
GCSStorageDeletionPolicy = Literal["DeleteWithCluster", "Retain"]
NetworkPolicyMode = Literal["DenyAll", "DenyAllIngress", "DenyAllEgress"]
IngressPathType = Literal["Exact", "Prefix", "ImplementationSpecific"]
UpscalingMode = Literal["Default", "Aggressive", "Conservative"]
AutoscalerVersion = Literal["v1", "v2"]

# `managedBy` of RayCluster, RayJob and RayService: set once, to KubeRay or MultiKueue.
ManagedBy = Annotated[
    str,
    Rule("self == oldSelf", "the managedBy field is immutable"),
    Rule(
        "self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",
        "the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
    ),
]


# --- Open vocabularies ------------------------------------------------------------------------------------
class ClusterState(StrEnum):
    """`status.state`; empty while not yet ready. `failed` is declared upstream but never written."""

    READY = "ready"
    FAILED = "failed"
    SUSPENDED = "suspended"


class RayClusterConditionType(StrEnum):
    PROVISIONED = "RayClusterProvisioned"
    HEAD_POD_READY = "HeadPodReady"
    REPLICA_FAILURE = "ReplicaFailure"
    SUSPENDING = "RayClusterSuspending"
    SUSPENDED = "RayClusterSuspended"


class RayClusterConditionReason(StrEnum):
    ALL_POD_RUNNING_AND_READY_FIRST_TIME = "AllPodRunningAndReadyFirstTime"
    PODS_PROVISIONING = "RayClusterPodsProvisioning"
    HEAD_POD_NOT_FOUND = "HeadPodNotFound"
    HEAD_POD_RUNNING_AND_READY = "HeadPodRunningAndReady"
    UNKNOWN = "Unknown"
    SUSPENDING = "RayClusterSuspending"
    SUSPENDED = "RayClusterSuspended"
    # ReplicaFailure reasons: which Pod operation failed.
    FAILED_DELETE_ALL_PODS = "FailedDeleteAllPods"
    FAILED_DELETE_HEAD_POD = "FailedDeleteHeadPod"
    FAILED_CREATE_HEAD_POD = "FailedCreateHeadPod"
    FAILED_DELETE_WORKER_POD = "FailedDeleteWorkerPod"
    FAILED_CREATE_WORKER_POD = "FailedCreateWorkerPod"


class RayNodeType(StrEnum):
    """Values of the `ray.io/node-type` label."""

    HEAD = "head"
    WORKER = "worker"
    REDIS_CLEANUP = "redis-cleanup"


class EventReason(StrEnum):
    RAY_CONFIG_ERROR = "RayConfigError"
    POD_RECONCILIATION_ERROR = "PodReconciliationError"


# --- Spec -------------------------------------------------------------------------------------------------
class RayClusterUpgradeStrategy(KubeModel):
    type: RayClusterUpgradeType | None = None


class AuthOptions(KubeModel):
    enable_k8s_token_auth: bool | None = Field(default=None, alias="enableK8sTokenAuth")
    secret_name: str | None = Field(default=None, alias="secretName")
    mode: AuthMode | None = None


class RedisCredential(KubeModel):
    value_from: EnvVarSource | None = Field(default=None, alias="valueFrom")
    value: str | None = None


class GcsEmbeddedStorage(KubeModel):
    """The RocksDB backend's volume: an existing claim (`claimName`) or an operator-managed PVC."""

    claim_name: str | None = Field(default=None, alias="claimName")
    size: Quantity | None = None
    storage_class_name: str | None = Field(default=None, alias="storageClassName")
    access_modes: list[str] | None = Field(default=None, alias="accessModes")
    sub_path: str | None = Field(default=None, alias="subPath")
    deletion_policy: GCSStorageDeletionPolicy | None = Field(default=None, alias="deletionPolicy")


class ActivePassiveHeadOptions(KubeModel):
    """Active-passive head HA through leader election (upstream v1.8: kuberay#4910, renamed and given its CEL
    rules by #5289). The rules read all three timings unguarded, so the schema defaults them (client-go's
    leader-election defaults): an absent timing compares as its default."""

    __crd_rules__: ClassVar[tuple[Rule, ...]] = (
        Rule(
            "self.leaseDurationSeconds > self.renewDeadlineSeconds",
            "leaseDurationSeconds must be greater than renewDeadlineSeconds",
        ),
        Rule(
            "self.renewDeadlineSeconds > self.retryPeriodSeconds",
            "renewDeadlineSeconds must be greater than retryPeriodSeconds",
        ),
    )

    lease_duration_seconds: Annotated[Int32, OpenAPI({"default": 15, "minimum": 1})] = Field(
        default=15, alias="leaseDurationSeconds"
    )
    renew_deadline_seconds: Annotated[Int32, OpenAPI({"default": 10, "minimum": 1})] = Field(
        default=10, alias="renewDeadlineSeconds"
    )
    retry_period_seconds: Annotated[Int32, OpenAPI({"default": 2, "minimum": 1})] = Field(
        default=2, alias="retryPeriodSeconds"
    )


class GcsFaultToleranceOptions(KubeModel):
    """Presence alone enables GCS fault tolerance; `backend` absent means `redis`."""

    backend: (
        Annotated[
            GcsFaultToleranceBackend, Rule("self == oldSelf", "gcsFaultToleranceOptions.backend is immutable")
        ]
        | None
    ) = None
    redis_username: RedisCredential | None = Field(default=None, alias="redisUsername")
    redis_password: RedisCredential | None = Field(default=None, alias="redisPassword")
    external_storage_namespace: str | None = Field(default=None, alias="externalStorageNamespace")
    redis_address: str | None = Field(default=None, alias="redisAddress")
    storage: GcsEmbeddedStorage | None = None
    # Only with the redis backend and the GCSFaultToleranceActivePassiveHead gate (validation says so).
    active_passive_options: ActivePassiveHeadOptions | None = Field(
        default=None, alias="activePassiveOptions"
    )


class CollectorOptions(KubeModel):
    image: str | None = None
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    resources: ResourceRequirements | None = None
    env: list[EnvVar] | None = None


class HistoryServerOptions(KubeModel):
    collector_options: CollectorOptions | None = Field(default=None, alias="collectorOptions")


class NetworkPolicyRules(KubeModel):
    ingress_rules: list[NetworkPolicyIngressRule] | None = Field(default=None, alias="ingressRules")
    egress_rules: list[NetworkPolicyEgressRule] | None = Field(default=None, alias="egressRules")


class WorkerGroupNetworkPolicyRules(NetworkPolicyRules):
    """Rules for one worker group; replaces (does not merge with) `NetworkPolicyConfig.worker`."""

    group_name: str = Field(alias="groupName")


class NetworkPolicyConfig(KubeModel):
    mode: Annotated[NetworkPolicyMode, OpenAPI({"default": "DenyAll"})] = "DenyAll"
    head: NetworkPolicyRules | None = None
    worker: NetworkPolicyRules | None = None
    worker_groups: (
        Annotated[
            list[WorkerGroupNetworkPolicyRules],
            OpenAPI({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["groupName"]}),
        ]
        | None
    ) = Field(default=None, alias="workerGroups")


class TLSOptions(KubeModel):
    enabled: bool | None = None


class IngressOptions(KubeModel):
    host: str | None = None
    path: str | None = None
    path_type: IngressPathType | None = Field(default=None, alias="pathType")
    tls: list[IngressTLS] | None = None


class HeadGroupSpec(KubeModel):
    template: PodTemplateSpec
    head_service: Service | None = Field(default=None, alias="headService")
    enable_ingress: bool | None = Field(default=None, alias="enableIngress")
    ingress_options: IngressOptions | None = Field(default=None, alias="ingressOptions")
    resources: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    ray_start_params: dict[str, str] | None = Field(default=None, alias="rayStartParams")
    service_type: str | None = Field(default=None, alias="serviceType")


class ScaleGate(KubeModel):
    """One reason a worker group may not grow now, written by another controller (Kueue's
    `kueue.k8s.io/quota-exceeded`); `name` is the merge key, so each writer adds and removes only its own."""

    name: str


class ScaleStrategy(KubeModel):
    workers_to_delete: list[str] | None = Field(default=None, alias="workersToDelete")
    # Upstream v1.8 (kuberay#5094). Others own it: the operator keeps it as written and, while it is
    # non-empty, creates no pods for the group.
    scale_gate: (
        Annotated[
            list[ScaleGate],
            OpenAPI({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}),
        ]
        | None
    ) = Field(default=None, alias="scaleGate")


class LabelMapping(KubeModel):
    """A node label delivered to the group's Ray nodes, under `mapTo` (default: the same key)."""

    node_label: str = Field(alias="nodeLabel")
    map_to: str | None = Field(default=None, alias="mapTo")


class WorkerGroupSpec(KubeModel):
    suspend: bool | None = None
    group_name: str = Field(alias="groupName")
    replicas: Annotated[Int32, OpenAPI({"default": 0})] = 0
    min_replicas: Annotated[Int32, OpenAPI({"default": 0}), Required()] = Field(
        default=0, alias="minReplicas"
    )
    max_replicas: Annotated[Int32, OpenAPI({"default": 2147483647}), Required()] = Field(
        default=2147483647, alias="maxReplicas"
    )
    idle_timeout_seconds: Int32 | None = Field(default=None, alias="idleTimeoutSeconds")
    priority: Annotated[Int32, OpenAPI({"default": 0})] = 0
    resources: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    ray_start_params: dict[str, str] | None = Field(default=None, alias="rayStartParams")
    template: PodTemplateSpec
    scale_strategy: ScaleStrategy | None = Field(default=None, alias="scaleStrategy")
    num_of_hosts: Annotated[Int32, OpenAPI({"default": 1})] = Field(default=1, alias="numOfHosts")
    # Node Label Delivery (gate TopologyLabelDelivery): kuberay#5260's `topology.labelMappings`, flattened
    # onto the group by #5329. Accepted and validated; nothing here delivers the labels yet.
    label_mappings: Annotated[list[LabelMapping], OpenAPI({"minItems": 1})] | None = Field(
        default=None, alias="labelMappings"
    )


class AutoscalerOptions(KubeModel):
    resources: ResourceRequirements | None = None
    image: str | None = None
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    security_context: SecurityContext | None = Field(default=None, alias="securityContext")
    idle_timeout_seconds: Int32 | None = Field(default=None, alias="idleTimeoutSeconds")
    upscaling_mode: UpscalingMode | None = Field(default=None, alias="upscalingMode")
    version: AutoscalerVersion | None = None
    env: list[EnvVar] | None = None
    env_from: list[EnvFromSource] | None = Field(default=None, alias="envFrom")
    volume_mounts: list[VolumeMount] | None = Field(default=None, alias="volumeMounts")
    command: list[str] | None = None
    args: list[str] | None = None


class RayClusterSpec(KubeModel):
    upgrade_strategy: RayClusterUpgradeStrategy | None = Field(default=None, alias="upgradeStrategy")
    auth_options: AuthOptions | None = Field(default=None, alias="authOptions")
    suspend: bool | None = None
    managed_by: ManagedBy | None = Field(default=None, alias="managedBy")
    autoscaler_options: AutoscalerOptions | None = Field(default=None, alias="autoscalerOptions")
    head_service_annotations: dict[str, str] | None = Field(default=None, alias="headServiceAnnotations")
    enable_in_tree_autoscaling: bool | None = Field(default=None, alias="enableInTreeAutoscaling")
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = Field(
        default=None, alias="gcsFaultToleranceOptions"
    )
    history_server_options: HistoryServerOptions | None = Field(default=None, alias="historyServerOptions")
    network_policy: NetworkPolicyConfig | None = Field(default=None, alias="networkPolicy")
    tls_options: TLSOptions | None = Field(default=None, alias="tlsOptions")
    head_group_spec: HeadGroupSpec = Field(alias="headGroupSpec")
    ray_version: str | None = Field(default=None, alias="rayVersion")
    worker_group_specs: list[WorkerGroupSpec] | None = Field(default=None, alias="workerGroupSpecs")


# --- Status -----------------------------------------------------------------------------------------------
class HeadInfo(KubeModel):
    pod_ip: str | None = Field(default=None, alias="podIP")
    service_ip: str | None = Field(default=None, alias="serviceIP")
    pod_name: str | None = Field(default=None, alias="podName")
    service_name: str | None = Field(default=None, alias="serviceName")


class RayClusterStatus(KubeModel):
    state: str | None = None  # a ClusterState
    desired_cpu: Quantity | None = Field(default=None, alias="desiredCPU")
    desired_memory: Quantity | None = Field(default=None, alias="desiredMemory")
    desired_gpu: Quantity | None = Field(default=None, alias="desiredGPU")
    desired_tpu: Quantity | None = Field(default=None, alias="desiredTPU")
    last_update_time: Annotated[Time | None, OpenAPI({"nullable": True})] = Field(
        default=None, alias="lastUpdateTime"
    )
    state_transition_times: dict[str, Time] | None = Field(default=None, alias="stateTransitionTimes")
    endpoints: dict[str, str] | None = None
    head: HeadInfo | None = None
    reason: str | None = None
    conditions: Annotated[list[Condition], CONDITIONS_LIST] | None = None
    ready_worker_replicas: Int32 | None = Field(default=None, alias="readyWorkerReplicas")
    available_worker_replicas: Int32 | None = Field(default=None, alias="availableWorkerReplicas")
    desired_worker_replicas: Int32 | None = Field(default=None, alias="desiredWorkerReplicas")
    min_worker_replicas: Int32 | None = Field(default=None, alias="minWorkerReplicas")
    max_worker_replicas: Int32 | None = Field(default=None, alias="maxWorkerReplicas")
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")


# --- The kind ---------------------------------------------------------------------------------------------
class RayCluster(KubeObject):
    PLURAL: ClassVar[str] = "rayclusters"

    kind: str = "RayCluster"
    spec: RayClusterSpec
    status: RayClusterStatus | None = None
