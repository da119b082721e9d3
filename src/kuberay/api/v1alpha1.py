"""The frozen, deprecated ray.io/v1alpha1 RayCluster, RayJob and RayService.

Upstream still serves v1alpha1 (deprecated, no conversion webhook: the API server stores v1 and relabels
`apiVersion`), and a write through v1alpha1 is pruned against this smaller schema. These models exist to
generate that schema exactly; the operator itself only reads and writes v1. They receive no new fields:
each class lists what upstream's v1alpha1 Go type has, and reuses a v1 type only where the two are
identical. There is no v1alpha1 RayCronJob.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from kuberay.api.base import Int32, Int64, KubeModel, OpenAPI, Quantity, Required, Time
from kuberay.api.meta import (
    EnvFromSource,
    EnvVar,
    KubeObject,
    PodTemplateSpec,
    ResourceRequirements,
    SecurityContext,
    Service,
    VolumeMount,
)
from kuberay.api.raycluster import UpscalingMode

API_VERSION = "ray.io/v1alpha1"


# --- RayCluster -------------------------------------------------------------------------------------------
class ScaleStrategy(KubeModel):
    """v1's ScaleStrategy before v1.8 gave it `scaleGate`."""

    workers_to_delete: list[str] | None = Field(default=None, alias="workersToDelete")


class AutoscalerOptions(KubeModel):
    """v1's AutoscalerOptions without `version`, `command` and `args`."""

    resources: ResourceRequirements | None = None
    image: str | None = None
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    security_context: SecurityContext | None = Field(default=None, alias="securityContext")
    idle_timeout_seconds: Int32 | None = Field(default=None, alias="idleTimeoutSeconds")
    upscaling_mode: UpscalingMode | None = Field(default=None, alias="upscalingMode")
    env: list[EnvVar] | None = None
    env_from: list[EnvFromSource] | None = Field(default=None, alias="envFrom")
    volume_mounts: list[VolumeMount] | None = Field(default=None, alias="volumeMounts")


class HeadGroupSpec(KubeModel):
    """Unlike v1, `rayStartParams` is required."""

    template: PodTemplateSpec
    head_service: Service | None = Field(default=None, alias="headService")
    enable_ingress: bool | None = Field(default=None, alias="enableIngress")
    ray_start_params: dict[str, str] = Field(alias="rayStartParams")
    service_type: str | None = Field(default=None, alias="serviceType")


class WorkerGroupSpec(KubeModel):
    """Unlike v1, `rayStartParams` is required."""

    group_name: str = Field(alias="groupName")
    replicas: Annotated[Int32, OpenAPI({"default": 0})] = 0
    min_replicas: Annotated[Int32, OpenAPI({"default": 0}), Required()] = Field(
        default=0, alias="minReplicas"
    )
    max_replicas: Annotated[Int32, OpenAPI({"default": 2147483647}), Required()] = Field(
        default=2147483647, alias="maxReplicas"
    )
    ray_start_params: dict[str, str] = Field(alias="rayStartParams")
    template: PodTemplateSpec
    scale_strategy: ScaleStrategy | None = Field(default=None, alias="scaleStrategy")


class RayClusterSpec(KubeModel):
    enable_in_tree_autoscaling: bool | None = Field(default=None, alias="enableInTreeAutoscaling")
    autoscaler_options: AutoscalerOptions | None = Field(default=None, alias="autoscalerOptions")
    suspend: bool | None = None
    head_service_annotations: dict[str, str] | None = Field(default=None, alias="headServiceAnnotations")
    head_group_spec: HeadGroupSpec = Field(alias="headGroupSpec")
    ray_version: str | None = Field(default=None, alias="rayVersion")
    worker_group_specs: list[WorkerGroupSpec] | None = Field(default=None, alias="workerGroupSpecs")


class HeadInfo(KubeModel):
    pod_ip: str | None = Field(default=None, alias="podIP")
    service_ip: str | None = Field(default=None, alias="serviceIP")


class RayClusterStatus(KubeModel):
    """v1's status without `conditions`, `stateTransitionTimes` and the head's names."""

    state: str | None = None
    desired_cpu: Quantity | None = Field(default=None, alias="desiredCPU")
    desired_memory: Quantity | None = Field(default=None, alias="desiredMemory")
    desired_gpu: Quantity | None = Field(default=None, alias="desiredGPU")
    desired_tpu: Quantity | None = Field(default=None, alias="desiredTPU")
    last_update_time: Annotated[Time | None, OpenAPI({"nullable": True})] = Field(
        default=None, alias="lastUpdateTime"
    )
    endpoints: dict[str, str] | None = None
    head: HeadInfo | None = None
    reason: str | None = None
    ready_worker_replicas: Int32 | None = Field(default=None, alias="readyWorkerReplicas")
    available_worker_replicas: Int32 | None = Field(default=None, alias="availableWorkerReplicas")
    desired_worker_replicas: Int32 | None = Field(default=None, alias="desiredWorkerReplicas")
    min_worker_replicas: Int32 | None = Field(default=None, alias="minWorkerReplicas")
    max_worker_replicas: Int32 | None = Field(default=None, alias="maxWorkerReplicas")
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")


class RayCluster(KubeObject):
    PLURAL: ClassVar[str] = "rayclusters"

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = "RayCluster"
    spec: RayClusterSpec | None = None
    status: RayClusterStatus | None = None


# --- RayJob -----------------------------------------------------------------------------------------------
class RayJobSpec(KubeModel):
    """Unlike v1, `entrypoint` is required."""

    submitter_pod_template: PodTemplateSpec | None = Field(default=None, alias="submitterPodTemplate")
    metadata: dict[str, str] | None = None
    ray_cluster_spec: RayClusterSpec | None = Field(default=None, alias="rayClusterSpec")
    cluster_selector: dict[str, str] | None = Field(default=None, alias="clusterSelector")
    entrypoint: str
    runtime_env_yaml: str | None = Field(default=None, alias="runtimeEnvYAML")
    job_id: str | None = Field(default=None, alias="jobId")
    entrypoint_resources: str | None = Field(default=None, alias="entrypointResources")
    ttl_seconds_after_finished: Annotated[Int32, OpenAPI({"default": 0})] = Field(
        default=0, alias="ttlSecondsAfterFinished"
    )
    entrypoint_num_cpus: float | None = Field(default=None, alias="entrypointNumCpus")
    entrypoint_num_gpus: float | None = Field(default=None, alias="entrypointNumGpus")
    shutdown_after_job_finishes: bool | None = Field(default=None, alias="shutdownAfterJobFinishes")
    suspend: bool | None = None


class RayJobStatus(KubeModel):
    job_id: str | None = Field(default=None, alias="jobId")
    ray_cluster_name: str | None = Field(default=None, alias="rayClusterName")
    dashboard_url: str | None = Field(default=None, alias="dashboardURL")
    job_status: str | None = Field(default=None, alias="jobStatus")
    job_deployment_status: str | None = Field(default=None, alias="jobDeploymentStatus")
    message: str | None = None
    start_time: Time | None = Field(default=None, alias="startTime")
    end_time: Time | None = Field(default=None, alias="endTime")
    ray_cluster_status: RayClusterStatus | None = Field(default=None, alias="rayClusterStatus")
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")


class RayJob(KubeObject):
    PLURAL: ClassVar[str] = "rayjobs"

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = "RayJob"
    spec: RayJobSpec | None = None
    status: RayJobStatus | None = None


# --- RayService -------------------------------------------------------------------------------------------
class RayServiceSpec(KubeModel):
    """Unlike v1, `rayClusterConfig` is optional."""

    serve_service: Service | None = Field(default=None, alias="serveService")
    service_unhealthy_second_threshold: Int32 | None = Field(
        default=None, alias="serviceUnhealthySecondThreshold"
    )
    deployment_unhealthy_second_threshold: Int32 | None = Field(
        default=None, alias="deploymentUnhealthySecondThreshold"
    )
    serve_config_v2: str | None = Field(default=None, alias="serveConfigV2")
    ray_cluster_config: RayClusterSpec | None = Field(default=None, alias="rayClusterConfig")


class ServeDeploymentStatus(KubeModel):
    status: str | None = None
    message: str | None = None
    health_last_update_time: Time | None = Field(default=None, alias="healthLastUpdateTime")


class AppStatus(KubeModel):
    status: str | None = None
    message: str | None = None
    health_last_update_time: Time | None = Field(default=None, alias="healthLastUpdateTime")
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] | None = Field(
        default=None, alias="serveDeploymentStatuses"
    )


class RayServiceStatus(KubeModel):
    application_statuses: dict[str, AppStatus] | None = Field(default=None, alias="applicationStatuses")
    ray_cluster_name: str | None = Field(default=None, alias="rayClusterName")
    ray_cluster_status: RayClusterStatus | None = Field(default=None, alias="rayClusterStatus")


class RayServiceStatuses(KubeModel):
    last_update_time: Time | None = Field(default=None, alias="lastUpdateTime")
    service_status: str | None = Field(default=None, alias="serviceStatus")
    active_service_status: RayServiceStatus | None = Field(default=None, alias="activeServiceStatus")
    pending_service_status: RayServiceStatus | None = Field(default=None, alias="pendingServiceStatus")
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")


class RayService(KubeObject):
    PLURAL: ClassVar[str] = "rayservices"

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = "RayService"
    spec: RayServiceSpec | None = None
    status: RayServiceStatuses | None = None
