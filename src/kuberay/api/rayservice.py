"""The ray.io/v1 RayService: `RayServiceSpec`, its upgrade strategy, `RayServiceStatuses` (with one
`RayServiceStatus` per active and pending cluster), and the vocabularies of its conditions.

Vocabularies the CRD leaves open (upgrade type, service status, condition types and reasons, Serve
application and deployment statuses) are `StrEnum`s; the fields that hold them are `str`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal, TypedDict

from pydantic import Field

from kuberay.api.base import Int32, Int64, KubeModel, OpenAPI, Time
from kuberay.api.meta import CONDITIONS_LIST, Condition, KubeObject, Service
from kuberay.api.raycluster import ManagedBy, RayClusterSpec, RayClusterStatus


class RayServiceUpgradeType(StrEnum):
    NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE = "NewClusterWithIncrementalUpgrade"
    NEW_CLUSTER = "NewCluster"
    NONE = "None"


class ServiceStatus(StrEnum):
    """Deprecated `status.serviceStatus`: `Running` iff the `Ready` condition is True."""

    RUNNING = "Running"
    NOT_RUNNING = ""


class RayServiceConditionType(StrEnum):
    READY = "Ready"
    UPGRADE_IN_PROGRESS = "UpgradeInProgress"
    ROLLBACK_IN_PROGRESS = "RollbackInProgress"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"


class RayServiceConditionReason(StrEnum):
    INITIALIZING = "Initializing"
    INITIALIZING_TIMEOUT = "InitializingTimeout"
    ZERO_SERVE_ENDPOINTS = "ZeroServeEndpoints"
    NON_ZERO_SERVE_ENDPOINTS = "NonZeroServeEndpoints"
    BOTH_ACTIVE_PENDING_CLUSTERS_EXIST = "BothActivePendingClustersExist"
    NO_PENDING_CLUSTER = "NoPendingCluster"
    NO_ACTIVE_CLUSTER = "NoActiveCluster"
    VALIDATION_FAILED = "ValidationFailed"
    DESIRED_CLUSTER_SPEC_CHANGED = "DesiredClusterSpecChanged"
    SUSPEND_REQUESTED = "SuspendRequested"
    SUSPEND_IN_PROGRESS = "SuspendInProgress"
    SUSPEND_COMPLETE = "SuspendComplete"
    RAY_SERVICE_RESUMED = "RayServiceResumed"


class ApplicationStatus(StrEnum):
    """A Serve application's status, as Ray Serve reports it."""

    NOT_STARTED = "NOT_STARTED"
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DELETING = "DELETING"
    UNHEALTHY = "UNHEALTHY"


class DeploymentStatus(StrEnum):
    """A Serve deployment's status, as Ray Serve reports it."""

    UPDATING = "UPDATING"
    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"


# --- Spec -------------------------------------------------------------------------------------------------
class ClusterUpgradeOptions(KubeModel):
    """Settings of the `NewClusterWithIncrementalUpgrade` upgrade (traffic moved by Gateway API)."""

    max_surge_percent: Annotated[Int32, OpenAPI({"default": 100})] = Field(
        default=100, alias="maxSurgePercent"
    )
    step_size_percent: Int32 = Field(alias="stepSizePercent")
    interval_seconds: Int32 = Field(alias="intervalSeconds")
    gateway_class_name: str = Field(alias="gatewayClassName")


class RayServiceUpgradeStrategy(KubeModel):
    type: str | None = None  # a RayServiceUpgradeType; checked by the controller, not the CRD
    cluster_upgrade_options: ClusterUpgradeOptions | None = Field(default=None, alias="clusterUpgradeOptions")


class RayServiceSpec(KubeModel):
    ray_cluster_deletion_delay_seconds: Annotated[Int32, OpenAPI({"minimum": 0})] | None = Field(
        default=None, alias="rayClusterDeletionDelaySeconds"
    )
    # Deprecated and ignored.
    service_unhealthy_second_threshold: Int32 | None = Field(
        default=None, alias="serviceUnhealthySecondThreshold"
    )
    deployment_unhealthy_second_threshold: Int32 | None = Field(
        default=None, alias="deploymentUnhealthySecondThreshold"
    )
    serve_service: Service | None = Field(default=None, alias="serveService")
    upgrade_strategy: RayServiceUpgradeStrategy | None = Field(default=None, alias="upgradeStrategy")
    managed_by: ManagedBy | None = Field(default=None, alias="managedBy")
    serve_config_v2: str | None = Field(default=None, alias="serveConfigV2")
    ray_cluster_config: RayClusterSpec = Field(alias="rayClusterConfig")
    exclude_head_pod_from_serve_svc: bool | None = Field(default=None, alias="excludeHeadPodFromServeSvc")
    suspend: bool | None = None


# --- Status -----------------------------------------------------------------------------------------------
class ServeDeploymentStatus(KubeModel):
    status: str | None = None  # a DeploymentStatus
    message: str | None = None


class AppStatus(KubeModel):
    deployments: dict[str, ServeDeploymentStatus] | None = Field(
        default=None, alias="serveDeploymentStatuses"
    )
    status: str | None = None  # an ApplicationStatus
    message: str | None = None


class RayServiceStatus(KubeModel):
    """What the RayService knows of one of its clusters (the active or the pending one)."""

    applications: dict[str, AppStatus] | None = Field(default=None, alias="applicationStatuses")
    target_capacity: Int32 | None = Field(default=None, alias="targetCapacity")
    traffic_routed_percent: Int32 | None = Field(default=None, alias="trafficRoutedPercent")
    last_traffic_migrated_time: Time | None = Field(default=None, alias="lastTrafficMigratedTime")
    ray_cluster_name: str | None = Field(default=None, alias="rayClusterName")
    ray_cluster_status: RayClusterStatus | None = Field(default=None, alias="rayClusterStatus")


class RayServiceStatuses(KubeModel):
    conditions: Annotated[list[Condition], CONDITIONS_LIST] | None = None
    last_update_time: Time | None = Field(default=None, alias="lastUpdateTime")
    service_status: str | None = Field(default=None, alias="serviceStatus")  # a ServiceStatus
    active_service_status: RayServiceStatus | None = Field(default=None, alias="activeServiceStatus")
    pending_service_status: RayServiceStatus | None = Field(default=None, alias="pendingServiceStatus")
    num_serve_endpoints: Int32 | None = Field(default=None, alias="numServeEndpoints")
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")


# The wire form the controller reads and writes (`status` as a dict, as the cache holds it), typed so that a
# misspelt key is a type error; the models above are the schema, and a test holds the two to the same keys.
class ServeSideDict(TypedDict, total=False):
    rayClusterName: str
    rayClusterStatus: dict[str, Any]
    applicationStatuses: dict[str, dict[str, Any]]
    targetCapacity: int
    trafficRoutedPercent: int
    lastTrafficMigratedTime: str


class RayServiceStatusDict(TypedDict, total=False):
    conditions: list[dict[str, Any]]
    lastUpdateTime: str
    serviceStatus: str
    activeServiceStatus: ServeSideDict
    pendingServiceStatus: ServeSideDict
    numServeEndpoints: int
    observedGeneration: int


ServeSide = Literal["activeServiceStatus", "pendingServiceStatus"]


# --- The kind ---------------------------------------------------------------------------------------------
class RayService(KubeObject):
    PLURAL: ClassVar[str] = "rayservices"

    kind: str = "RayService"
    spec: RayServiceSpec
    status: RayServiceStatuses | None = None
