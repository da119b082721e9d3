"""The ray.io/v1 RayJob: `RayJobSpec` (also the `jobTemplate` of a RayCronJob), its deletion strategy,
`RayJobStatus`, and the vocabularies of the job lifecycle.

Fields constrained by a CRD `enum` are `Literal`s. The lifecycle vocabularies (`JobStatus` comes from
Ray's dashboard verbatim, `JobDeploymentStatus` from the operator) are open in the CRD, so status fields
are `str` and the `StrEnum`s below give their known values.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal, TypedDict

from pydantic import Field

from kuberay.api.base import Int32, Int64, KubeModel, OpenAPI, Rule, Time
from kuberay.api.meta import GoFloat, KubeObject, PodTemplateSpec
from kuberay.api.raycluster import ManagedBy, RayClusterSpec, RayClusterStatus

DeletionPolicyType = Literal["DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone"]


class JobStatus(StrEnum):
    """The Ray job's status as Ray's dashboard reports it; empty before the first report."""

    NEW = ""
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        return self in (JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED)


class JobDeploymentStatus(StrEnum):
    """The operator's lifecycle of a RayJob; empty (New) before the first reconcile."""

    NEW = ""
    INITIALIZING = "Initializing"
    RUNNING = "Running"
    COMPLETE = "Complete"
    FAILED = "Failed"
    VALIDATION_FAILED = "ValidationFailed"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    RETRYING = "Retrying"
    WAITING = "Waiting"

    @property
    def is_terminal(self) -> bool:
        return self in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED)


class JobFailedReason(StrEnum):
    SUBMISSION_FAILED = "SubmissionFailed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    PRE_RUNNING_DEADLINE_EXCEEDED = "PreRunningDeadlineExceeded"
    APP_FAILED = "AppFailed"
    JOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_EXCEEDED = (
        "JobDeploymentStatusTransitionGracePeriodExceeded"
    )
    JOB_STATUS_CHECK_TIMEOUT_EXCEEDED = "JobStatusCheckTimeoutExceeded"
    VALIDATION_FAILED = "ValidationFailed"


class JobSubmissionMode(StrEnum):
    """`spec.submissionMode`; the CRD has no enum for it and the controller never checks it."""

    K8S_JOB_MODE = "K8sJobMode"
    HTTP_MODE = "HTTPMode"
    INTERACTIVE_MODE = "InteractiveMode"
    SIDECAR_MODE = "SidecarMode"


# --- Deletion strategy ------------------------------------------------------------------------------------
class DeletionPolicy(KubeModel):
    """Legacy `onSuccess`/`onFailure` action."""

    policy: DeletionPolicyType | None = None


class DeletionCondition(KubeModel):
    __crd_rules__: ClassVar[tuple[Rule, ...]] = (
        Rule(
            "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
            "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition.",
        ),
        Rule(
            "has(self.jobStatus) || has(self.jobDeploymentStatus)",
            "the deletion condition requires either the JobStatus or the JobDeploymentStatus field.",
        ),
    )

    job_status: Literal["SUCCEEDED", "FAILED"] | None = Field(default=None, alias="jobStatus")
    job_deployment_status: Literal["Failed"] | None = Field(default=None, alias="jobDeploymentStatus")
    ttl_seconds: Annotated[Int32, OpenAPI({"default": 0, "minimum": 0})] = Field(
        default=0, alias="ttlSeconds"
    )


class DeletionRule(KubeModel):
    policy: DeletionPolicyType
    condition: DeletionCondition


class DeletionStrategy(KubeModel):
    __crd_rules__: ClassVar[tuple[Rule, ...]] = (
        Rule(
            "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
            "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same "
            "deletionStrategy",
        ),
        Rule(
            "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
            "deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field "
            "(cannot be empty)",
        ),
    )

    on_success: DeletionPolicy | None = Field(default=None, alias="onSuccess")
    on_failure: DeletionPolicy | None = Field(default=None, alias="onFailure")
    deletion_rules: (
        Annotated[list[DeletionRule], OpenAPI({"minItems": 1, "x-kubernetes-list-type": "atomic"})] | None
    ) = Field(default=None, alias="deletionRules")


# --- Spec -------------------------------------------------------------------------------------------------
class SubmitterConfig(KubeModel):
    backoff_limit: Int32 | None = Field(default=None, alias="backoffLimit")


class RayJobSpec(KubeModel):
    active_deadline_seconds: Int32 | None = Field(default=None, alias="activeDeadlineSeconds")
    backoff_limit: Annotated[Int32, OpenAPI({"default": 0})] = Field(default=0, alias="backoffLimit")
    ray_cluster_spec: RayClusterSpec | None = Field(default=None, alias="rayClusterSpec")
    submitter_pod_template: PodTemplateSpec | None = Field(default=None, alias="submitterPodTemplate")
    metadata: dict[str, str] | None = None
    cluster_selector: dict[str, str] | None = Field(default=None, alias="clusterSelector")
    submitter_config: SubmitterConfig | None = Field(default=None, alias="submitterConfig")
    managed_by: ManagedBy | None = Field(default=None, alias="managedBy")
    deletion_strategy: DeletionStrategy | None = Field(default=None, alias="deletionStrategy")
    entrypoint: str | None = None
    runtime_env_yaml: str | None = Field(default=None, alias="runtimeEnvYAML")
    job_id: str | None = Field(default=None, alias="jobId")
    submission_mode: Annotated[str, OpenAPI({"default": "K8sJobMode"})] = Field(
        default=JobSubmissionMode.K8S_JOB_MODE.value, alias="submissionMode"
    )
    entrypoint_resources: str | None = Field(default=None, alias="entrypointResources")
    entrypoint_num_cpus: GoFloat | None = Field(default=None, alias="entrypointNumCpus")
    entrypoint_num_gpus: GoFloat | None = Field(default=None, alias="entrypointNumGpus")
    ttl_seconds_after_finished: Annotated[Int32, OpenAPI({"default": 0})] = Field(
        default=0, alias="ttlSecondsAfterFinished"
    )
    pre_running_deadline_seconds: Annotated[Int32, OpenAPI({"minimum": 1})] | None = Field(
        default=None, alias="preRunningDeadlineSeconds"
    )
    shutdown_after_job_finishes: bool | None = Field(default=None, alias="shutdownAfterJobFinishes")
    suspend: bool | None = None


# --- Status -----------------------------------------------------------------------------------------------
class RayJobStatusInfo(KubeModel):
    """Start and end of the Ray job as Ray's dashboard reports them."""

    start_time: Time | None = Field(default=None, alias="startTime")
    end_time: Time | None = Field(default=None, alias="endTime")


class RayJobStatus(KubeModel):
    ray_job_info: RayJobStatusInfo | None = Field(default=None, alias="rayJobInfo")
    job_id: str | None = Field(default=None, alias="jobId")
    ray_cluster_name: str | None = Field(default=None, alias="rayClusterName")
    dashboard_url: str | None = Field(default=None, alias="dashboardURL")
    job_status: str | None = Field(default=None, alias="jobStatus")  # a JobStatus
    job_deployment_status: str | None = Field(
        default=None, alias="jobDeploymentStatus"
    )  # a JobDeploymentStatus
    reason: str | None = None  # a JobFailedReason
    message: str | None = None
    start_time: Time | None = Field(default=None, alias="startTime")
    end_time: Time | None = Field(default=None, alias="endTime")
    succeeded: Annotated[Int32, OpenAPI({"default": 0})] = 0
    failed: Annotated[Int32, OpenAPI({"default": 0})] = 0
    ray_cluster_status: RayClusterStatus | None = Field(default=None, alias="rayClusterStatus")
    job_status_check_failure_start_time: Time | None = Field(
        default=None, alias="jobStatusCheckFailureStartTime"
    )
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")


# The wire form the controller reads and writes (`status` as a dict, as the cache holds it), typed so that a
# misspelt key is a type error; the models above are the schema, and a test holds the two to the same keys.
class RayJobStatusInfoDict(TypedDict, total=False):
    startTime: str
    endTime: str


class RayJobStatusDict(TypedDict, total=False):
    rayJobInfo: RayJobStatusInfoDict
    jobId: str
    rayClusterName: str
    dashboardURL: str
    jobStatus: str
    jobDeploymentStatus: str
    reason: str
    message: str
    startTime: str
    endTime: str
    succeeded: int
    failed: int
    rayClusterStatus: dict[str, Any]
    jobStatusCheckFailureStartTime: str
    observedGeneration: int


# --- The kind ---------------------------------------------------------------------------------------------
class RayJob(KubeObject):
    PLURAL: ClassVar[str] = "rayjobs"

    kind: str = "RayJob"
    spec: RayJobSpec = Field(default_factory=RayJobSpec)
    status: RayJobStatus | None = None
