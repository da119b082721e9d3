"""What the RayJob state machine (`state.step`) reads and what it decides: the facts a reconcile gathers
(the RayJob's cluster, its submitter, the dashboard's latest answer, the time), the operator-wide
`Settings`, and the `Decision` (the next status, the `Action`s to perform in order, the Events to record,
whether to write, when to look again). Plain data: the reconciler fills the facts and performs decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from kuberay.api import constants
from kuberay.api.features import FeatureGates
from kuberay.api.rayjob import JobDeploymentStatus, JobStatus, RayJobStatusDict
from kuberay.controllers.podproblems import StartupProblem
from kuberay.rayclient.dashboard import DashboardError, JobInfo

Status = RayJobStatusDict


class Action(StrEnum):
    """Things the reconciler does for a decision, in the order listed in `Decision.actions`."""

    ADD_FINALIZER = "AddFinalizer"
    REMOVE_FINALIZER = "RemoveFinalizer"
    STOP_JOB = "StopJob"  # ask the dashboard to stop the Ray job (failure only logged)
    CREATE_CLUSTER = "CreateCluster"
    CREATE_SUBMITTER = "CreateSubmitter"
    RECONCILE_HEAD_SERVICE = "ReconcileHeadService"
    POLL = "Poll"  # keep the job's status polled (and, in HTTPMode, submitted)
    STOP_POLLING = "StopPolling"
    DELETE_CLUSTER = "DeleteCluster"
    DELETE_SUBMITTER = "DeleteSubmitter"
    SUSPEND_WORKERS = "SuspendWorkers"
    DELETE_SELF = "DeleteSelf"
    BATCH_SCHEDULE = "BatchSchedule"  # the batch scheduler's work before the cluster is made (PodGroups)
    # Give back what the batch scheduler holds for the job; its failure fails the pass while releasing,
    # and is only logged once the job has finished.
    CLEANUP_BATCH_SCHEDULER = "CleanupBatchScheduler"


POLICY_ACTIONS: dict[str, Action] = {
    "DeleteCluster": Action.DELETE_CLUSTER,
    "DeleteWorkers": Action.SUSPEND_WORKERS,
    "DeleteSelf": Action.DELETE_SELF,
}


@dataclass(frozen=True)
class Settings:
    """The operator-wide knobs of the state machine (upstream reads the first three from its environment)."""

    gates: FeatureGates = field(default_factory=FeatureGates)
    transition_grace_period: int = constants.DEFAULT_RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS
    status_check_timeout: int = constants.DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
    delete_rayjob_after_job_finishes: bool = False
    # None: wait for a stuck cluster forever, as upstream does.
    cluster_start_timeout: float | None = 300.0
    # A batch scheduler is configured (`--batch-scheduler`, `KubernetesWAS`): its actions are taken.
    batch_scheduler: bool = False


@dataclass(frozen=True)
class ClusterFacts:
    """The job's RayCluster as the cache shows it (`exists=False`: not there)."""

    exists: bool
    deleting: bool = False
    status: dict[str, Any] = field(default_factory=dict)
    # `<svc>.<ns>.svc.<domain>:<port>` once the head Service has a dashboard port.
    dashboard_address: str | None = None
    workers_suspended: bool = False
    problem: StartupProblem | None = None
    # The names of the cluster's head pods that exist and are not being deleted.
    live_heads: frozenset[str] = frozenset()

    @property
    def ready(self) -> bool:
        return self.status.get("state") == "ready"


@dataclass(frozen=True)
class SubmitterFacts:
    """The submitter: the K8sJobMode Job or the SidecarMode head-pod container."""

    exists: bool = False
    deleting: bool = False
    failure: str | None = None  # the SubmissionFailed message, when the submitter failed
    head_pod_missing: bool = False  # SidecarMode: no head pod (always an app failure)
    finished_at: datetime | None = None


@dataclass(frozen=True)
class Observation:
    """The latest answer of the dashboard about the job: its info, or the error of asking.

    `submitted`: the dashboard did not know an HTTPMode job, so it was submitted (again); `error` is then the
    submission's error, if it failed, and the job's status is read by a later poll (upstream
    `reconcileHTTPModeJobNotFound`)."""

    info: JobInfo | None = None
    error: DashboardError | None = None
    submitted: bool = False


@dataclass(frozen=True)
class Facts:
    now: datetime
    cluster: ClusterFacts = field(default_factory=lambda: ClusterFacts(exists=False))
    submitter: SubmitterFacts = field(default_factory=SubmitterFacts)
    observation: Observation | None = None


@dataclass(frozen=True)
class EventNote:
    type: str
    reason: str
    message: str
    action: str


@dataclass
class Decision:
    status: Status
    actions: list[Action] = field(default_factory=list)
    events: list[EventNote] = field(default_factory=list)
    write: bool = False
    requeue_after: float | None = None
    # Set: the pass fails after the actions (retried with back-off); the status is not written.
    error: str | None = None


def job_terminal(job_status: str | None) -> bool:
    """A Ray job status that never changes again (any other string, known or not, may)."""
    return job_status in (JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED)


def deployment_terminal(deployment_status: str | None) -> bool:
    return deployment_status in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED)
