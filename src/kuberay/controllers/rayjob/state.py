"""The RayJob state machine: from what was observed, the next status and what to do about it. Pure.

`step(job, facts, settings)` reads one RayJob and the facts the reconciler gathered for it (its RayCluster,
its submitter, the latest dashboard observation, the time) and returns a `Decision`: the new status, the
actions to perform in order, the Events to record, whether the status is written, and when to look again
(those types are in `decision`). The reconciler performs the actions; if one fails the pass fails (retried with back-off) and the status is
not written, which is upstream's "requeue + error" everywhere.

Upstream's `RayJobReconciler.Reconcile`, case by case of its `switch` on `JobDeploymentStatus`, with its quirks kept
on purpose:
- the status is written only when `jobStatus`, `jobDeploymentStatus`, `jobStatusCheckFailureStartTime` or
  the copied RayCluster status changed; `endTime` is stamped by a write that lands in Complete/Failed;
- a `Failed` attempt with retries left becomes `Retrying` in the same write (never for DeadlineExceeded or
  JobStatusCheckTimeoutExceeded), and each retry starts over from New with a new cluster;
- with a submitter (K8sJobMode, SidecarMode) a terminal Ray job counts only once the submitter finished.

Differences from upstream, all deliberate:
- Initializing is bounded: when a pod of the job's cluster is stuck in a state that waiting does not cure
  (image pull errors, crash loops, unschedulable, failed) and the attempt has been Initializing for
  `Settings.cluster_start_timeout`, the attempt fails with reason `ClusterStartFailed` and the stuck pod's
  reason in the message (and is retried under `backoffLimit` like any other start-up failure).
- A `ValidationFailed` RayJob whose spec has become valid starts over (New) instead of staying failed.
- A SidecarMode job whose submitter finished before the head pod was ever Ready (a short job: the
  terminated sidecar keeps the pod unready, so the cluster never becomes ready) moves on to Running and
  reads the job's outcome, instead of staying Initializing forever.
- A Running attempt whose head pod is lost (deleted, or replaced by the RayCluster controller) fails with
  reason `HeadPodLost` and the lost pod's name (kuberay#3903: upstream waits on a job the new head never
  heard of). The entrypoint's driver runs on the head, so the job died with it whatever the mode or GCS fault
  tolerance; a retry under `backoffLimit` starts it again on a new cluster, and cleanup follows the policy
  of a failed job. The head the attempt runs on is `rayClusterStatus.head.podName`, refreshed when the
  attempt enters Running. (SidecarMode's head is never recreated, and upstream's "Ray head pod not found."
  row keeps deciding when there is no head at all.)
"""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from kuberay.api import constants
from kuberay.api.features import Feature
from kuberay.api.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
    RayJob,
    RayJobStatusInfoDict,
)
from kuberay.api.validation import validate_rayjob
from kuberay.controllers.rayjob import deletion
from kuberay.controllers.rayjob.decision import (
    POLICY_ACTIONS,
    Action,
    Decision,
    EventNote,
    Facts,
    Settings,
    Status,
    deployment_terminal,
    job_terminal,
)
from kuberay.rayclient.dashboard import JobInfo, JobNotFound
from kubesemantics import times
from kubesemantics.names import random_suffix

REQUEUE_SECONDS = 3.0  # upstream RayJobDefaultRequeueDuration
SUBMITTER_FINISHED_TIMEOUT_SECONDS = 30  # upstream DefaultSubmitterFinishedTimeout
CLUSTER_START_FAILED = "ClusterStartFailed"  # our reason for a cluster that cannot start
HEAD_POD_LOST = "HeadPodLost"  # our reason for an attempt whose head pod went away under it

# --- time -------------------------------------------------------------------------------------------------------


def parse_time(value: str | None) -> datetime | None:
    """A status time, None when unset."""
    return times.parse_time(value) if value else None


def _date_time(moment: datetime) -> str:
    """Go's `time.DateTime` layout."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _ms_time(milliseconds: int) -> str:
    return times.format_time(datetime.fromtimestamp(milliseconds / 1000, UTC))


# --- the machine ------------------------------------------------------------------------------------------------


def step(job: RayJob, facts: Facts, settings: Settings, rng: random.Random | None = None) -> Decision:
    """The next status of `job` and the actions that lead there (see the module docstring)."""
    old = cast(Status, job.status.dump()) if job.status is not None else Status()
    decision = Decision(copy.deepcopy(old))
    metadata = job.metadata
    if job.spec.managed_by is not None and job.spec.managed_by != constants.KUBERAY_CONTROLLER:
        return decision
    if metadata.deletion_timestamp:
        if not job_terminal(old.get("jobStatus")):
            decision.actions.append(Action.STOP_JOB)
        decision.actions += [Action.STOP_POLLING, Action.REMOVE_FINALIZER]
        decision.requeue_after = REQUEUE_SECONDS
        return decision
    errors = validate_rayjob(job, settings.gates)
    if errors:
        first = errors[0]
        kind = first.path.split(".")[0].split("[")[0]
        reason = {"metadata": "InvalidRayJobMetadata", "status": "InvalidRayJobStatus"}.get(
            kind, "InvalidRayJobSpec"
        )
        decision.events.append(
            EventNote("Warning", reason, f"{job.namespace}/{job.name}: {first.message}", "Validate")
        )
        new = decision.status
        new["jobDeploymentStatus"] = JobDeploymentStatus.VALIDATION_FAILED.value
        new["reason"] = JobFailedReason.VALIDATION_FAILED.value
        new["message"] = first.message
        decision.write = _changed(old, new)
        return decision
    finished = _dispatch(job, facts, settings, decision, rng or random.Random())
    if finished:
        return decision
    _retry_if_allowed(job, decision.status)
    decision.write = _changed(old, decision.status)
    if decision.write and deployment_terminal(decision.status.get("jobDeploymentStatus")):
        decision.status["endTime"] = times.format_time(facts.now)
    if decision.requeue_after is None:
        decision.requeue_after = REQUEUE_SECONDS
    return decision


def _dispatch(job: RayJob, facts: Facts, settings: Settings, decision: Decision, rng: random.Random) -> bool:
    """Runs the branch of the current state; True when the branch settled the pass itself (no common tail)."""
    state = decision.status.get("jobDeploymentStatus") or ""
    if state == JobDeploymentStatus.NEW:
        _new(job, facts, decision, rng)
        return False
    if state == JobDeploymentStatus.INITIALIZING:
        return _initializing(job, facts, settings, decision)
    if state == JobDeploymentStatus.WAITING:
        return _waiting(job, facts, decision)
    if state == JobDeploymentStatus.RUNNING:
        return _running(job, facts, settings, decision)
    if state in (JobDeploymentStatus.SUSPENDING, JobDeploymentStatus.RETRYING):
        return _releasing(job, facts, settings, decision)
    if state == JobDeploymentStatus.SUSPENDED:
        if job.spec.suspend:
            return True  # stays suspended until the flag flips: no requeue
        decision.status.pop("jobStatus", None)
        decision.status["jobDeploymentStatus"] = JobDeploymentStatus.NEW.value
        return False
    if state in (JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED):
        _finished(job, facts, settings, decision)
        return True
    if state == JobDeploymentStatus.VALIDATION_FAILED:
        # Valid again (validation ran before the dispatch): start over.
        decision.status.pop("reason", None)
        decision.status.pop("message", None)
        decision.status["jobDeploymentStatus"] = JobDeploymentStatus.NEW.value
        return False
    decision.requeue_after = REQUEUE_SECONDS  # an unknown state: upstream logs and looks again
    return True


def _new(job: RayJob, facts: Facts, decision: Decision, rng: random.Random) -> None:
    if constants.RAY_JOB_STOP_JOB_FINALIZER not in (job.metadata.finalizers or []):
        decision.actions.append(Action.ADD_FINALIZER)
    status = decision.status
    if status.get("jobId") and status.get("rayClusterName") and status.get("jobStatus"):
        return
    if job.spec.submission_mode != JobSubmissionMode.INTERACTIVE_MODE and not status.get("jobId"):
        status["jobId"] = job.spec.job_id or f"{job.name}-{random_suffix(rng)}"
    if not status.get("rayClusterName"):
        selected = (job.spec.cluster_selector or {}).get(constants.RAY_JOB_CLUSTER_SELECTOR_KEY)
        status["rayClusterName"] = selected or f"{job.name}-{random_suffix(rng)}"
    if not status.get("jobStatus"):  # upstream's jobStatus is omitempty: no status yet, no field
        status.pop("jobStatus", None)
    status["jobDeploymentStatus"] = JobDeploymentStatus.INITIALIZING.value
    status["startTime"] = times.format_time(facts.now)


def _initializing(job: RayJob, facts: Facts, settings: Settings, decision: Decision) -> bool:
    status = decision.status
    if _suspend_requested(job, status) or _past_active_deadline(job, facts, status):
        return False
    if _past_pre_running_deadline(job, facts, status):
        return False
    if settings.batch_scheduler:
        decision.actions.append(Action.BATCH_SCHEDULE)
    cluster = facts.cluster
    if not cluster.exists:
        return _missing_cluster(job, decision)
    if not status.get("dashboardURL"):
        # A SidecarMode submitter that already finished leaves the head pod unready for good (one of its
        # containers has terminated): the job ran, so go and read its outcome instead of waiting.
        sidecar_finished = (
            job.spec.submission_mode == JobSubmissionMode.SIDECAR_MODE
            and facts.submitter.finished_at is not None
        )
        if not cluster.ready and not sidecar_finished:
            status["rayClusterStatus"] = copy.deepcopy(cluster.status)
            _fail_if_cluster_cannot_start(job, facts, settings, status)
            return False
        if not cluster.dashboard_address:
            decision.error = (
                f"dashboard port is not found for RayCluster {job.namespace}/{status.get('rayClusterName')}"
            )
            return True
        status["dashboardURL"] = cluster.dashboard_address
    # The head this attempt runs on, for the lost-head check of Running.
    status["rayClusterStatus"] = copy.deepcopy(cluster.status)
    mode = job.spec.submission_mode
    if mode == JobSubmissionMode.INTERACTIVE_MODE:
        status["jobDeploymentStatus"] = JobDeploymentStatus.WAITING.value
        return False
    if mode == JobSubmissionMode.K8S_JOB_MODE and not facts.submitter.exists:
        decision.actions.append(Action.CREATE_SUBMITTER)
    status["jobDeploymentStatus"] = JobDeploymentStatus.RUNNING.value
    return False


def _fail_if_cluster_cannot_start(job: RayJob, facts: Facts, settings: Settings, status: Status) -> None:
    problem = facts.cluster.problem
    started = parse_time(status.get("startTime"))
    if problem is None or settings.cluster_start_timeout is None or started is None:
        return
    if facts.now < started + timedelta(seconds=settings.cluster_start_timeout):
        return
    _fail(
        status,
        CLUSTER_START_FAILED,
        f"The RayCluster {job.namespace}/{status.get('rayClusterName')} did not start within "
        f"{settings.cluster_start_timeout:g}s: {problem.describe()}",
    )


def _waiting(job: RayJob, facts: Facts, decision: Decision) -> bool:
    status = decision.status
    if _past_pre_running_deadline(job, facts, status):
        return False
    if not job.spec.job_id:
        decision.requeue_after = REQUEUE_SECONDS
        return True
    status["jobId"] = job.spec.job_id
    status["jobDeploymentStatus"] = JobDeploymentStatus.RUNNING.value
    return False


def _running(job: RayJob, facts: Facts, settings: Settings, decision: Decision) -> bool:
    status = decision.status
    if _suspend_requested(job, status) or _past_active_deadline(job, facts, status):
        return False
    if _past_transition_grace_period(facts, settings, status):
        return False
    if _past_status_check_timeout(facts, settings, status):
        return False
    if not facts.cluster.exists:
        return _missing_cluster(job, decision)
    if _head_pod_lost(job, facts, status):
        return False
    if not job.spec.cluster_selector:
        decision.actions.append(Action.RECONCILE_HEAD_SERVICE)
    mode = job.spec.submission_mode
    submitter = facts.submitter
    with_submitter = mode in (JobSubmissionMode.K8S_JOB_MODE, JobSubmissionMode.SIDECAR_MODE)
    if with_submitter:
        if mode == JobSubmissionMode.K8S_JOB_MODE and not submitter.exists:
            decision.error = f"failed to get the submitter Job {job.namespace}/{job.name}: not found"
            return True
        if submitter.finished_at is not None and facts.now >= submitter.finished_at + timedelta(
            seconds=SUBMITTER_FINISHED_TIMEOUT_SECONDS
        ):
            status["jobStatus"] = JobStatus.FAILED.value
            _fail(
                status,
                JobFailedReason.JOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_EXCEEDED,
                f"The RayJob submitter finished at {_date_time(submitter.finished_at)} but the ray job did not "
                f"reach terminal state within {SUBMITTER_FINISHED_TIMEOUT_SECONDS}s",
            )
            return False
        if submitter.head_pod_missing:
            _fail(status, JobFailedReason.APP_FAILED, "Ray head pod not found.")
            return False
        if submitter.failure is not None:
            if status.get("jobStatus") == JobStatus.FAILED:
                status["jobDeploymentStatus"] = JobDeploymentStatus.FAILED.value
                status["reason"] = JobFailedReason.APP_FAILED.value
            else:
                _fail(status, JobFailedReason.SUBMISSION_FAILED, submitter.failure)
            return False
    decision.actions.append(Action.POLL)
    observation = facts.observation
    if observation is None:
        decision.requeue_after = REQUEUE_SECONDS
        return True
    if observation.submitted and observation.error is None:
        # A successful submission ends a run of failed checks; the status is written only if one was running.
        if not status.get("jobStatusCheckFailureStartTime"):
            decision.requeue_after = REQUEUE_SECONDS
            return True
        status.pop("jobStatusCheckFailureStartTime")
        return False
    if isinstance(observation.error, JobNotFound) and not observation.submitted:
        if with_submitter and submitter.finished_at is not None:
            _fail(
                status, JobFailedReason.APP_FAILED, "Submitter completed but Ray job not found in RayCluster."
            )
            return False
        decision.requeue_after = REQUEUE_SECONDS
        return True
    if observation.error is not None or observation.info is None:
        # A failed check (or failed submission) starts the failure timer; the status is written only then.
        if status.get("jobStatusCheckFailureStartTime"):
            decision.requeue_after = REQUEUE_SECONDS
            return True
        status["jobStatusCheckFailureStartTime"] = times.format_time(facts.now)
        # The timer alone does not say why the job is stuck: one Warning per run of failures does (upstream
        # leaves it to the operator's log).
        failure = str(observation.error) if observation.error is not None else "no job info"
        decision.events.append(
            EventNote(
                "Warning", "JobStatusCheckFailed", f"Failed to get the Ray job's status: {failure}", "Poll"
            )
        )
        return False
    _copy_job_info(observation.info, facts, status, with_submitter)
    return False


def _copy_job_info(info: JobInfo, facts: Facts, status: Status, with_submitter: bool) -> None:
    status.pop("jobStatusCheckFailureStartTime", None)
    terminal = info.terminal and (not with_submitter or facts.submitter.finished_at is not None)
    deployment = JobDeploymentStatus.RUNNING
    reason = ""
    if terminal:
        deployment = JobDeploymentStatus.COMPLETE
        if info.status == JobStatus.FAILED:
            deployment = JobDeploymentStatus.FAILED
            reason = JobFailedReason.APP_FAILED.value
    status["rayClusterStatus"] = copy.deepcopy(facts.cluster.status)
    status["jobStatus"] = info.status
    status["jobDeploymentStatus"] = deployment.value
    _set_or_drop(status, "reason", reason)
    _set_or_drop(status, "message", info.message)
    job_info = copy.copy(status.get("rayJobInfo", RayJobStatusInfoDict()))
    if info.start_time:
        job_info["startTime"] = _ms_time(info.start_time)
    if info.end_time:
        job_info["endTime"] = _ms_time(info.end_time)
    if job_info:
        status["rayJobInfo"] = job_info


def _releasing(job: RayJob, facts: Facts, settings: Settings, decision: Decision) -> bool:
    """Suspending and Retrying: delete the cluster and the submitter Job, then reset the status."""
    decision.actions.append(Action.STOP_POLLING)
    released = True
    if not job.spec.cluster_selector and facts.cluster.exists:
        released = False
        if not facts.cluster.deleting:
            decision.actions.append(Action.DELETE_CLUSTER)
    if job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE and facts.submitter.exists:
        released = False
        if not facts.submitter.deleting:
            decision.actions.append(Action.DELETE_SUBMITTER)
    if not released:
        decision.requeue_after = REQUEUE_SECONDS
        return True
    if settings.batch_scheduler:
        decision.actions.append(Action.CLEANUP_BATCH_SCHEDULER)
    status = decision.status
    status.pop("rayClusterName", None)
    status.pop("dashboardURL", None)
    status.pop("jobId", None)
    status.pop("message", None)
    status.pop("reason", None)
    status.pop("jobStatusCheckFailureStartTime", None)
    status["rayClusterStatus"] = {}
    status["rayJobInfo"] = {}
    status.pop("jobStatus", None)
    suspending = status.get("jobDeploymentStatus") == JobDeploymentStatus.SUSPENDING
    status["jobDeploymentStatus"] = (
        JobDeploymentStatus.SUSPENDED.value if suspending else JobDeploymentStatus.NEW.value
    )
    return False


def _finished(job: RayJob, facts: Facts, settings: Settings, decision: Decision) -> None:
    decision.actions.append(Action.STOP_POLLING)
    end_time = parse_time(decision.status.get("endTime")) or facts.now
    cleanup = deletion.decide(
        job,
        deletion.ClusterState(facts.cluster.exists, facts.cluster.deleting, facts.cluster.workers_suspended),
        facts.now,
        end_time,
        deletion_policy_gate=settings.gates.enabled(Feature.RAY_JOB_DELETION_POLICY),
        delete_rayjob_after_job_finishes=settings.delete_rayjob_after_job_finishes,
    )
    if cleanup.policy is not None and cleanup.policy in POLICY_ACTIONS:
        action = POLICY_ACTIONS[cleanup.policy]
        # Deleting a cluster that is gone or already going is a no-op upstream; skip the call.
        if action != Action.DELETE_CLUSTER or (facts.cluster.exists and not facts.cluster.deleting):
            decision.actions.append(action)
    if settings.batch_scheduler:
        decision.actions.append(Action.CLEANUP_BATCH_SCHEDULER)
    decision.requeue_after = cleanup.requeue_after


# --- checks shared by several states ----------------------------------------------------------------------------


def _missing_cluster(job: RayJob, decision: Decision) -> bool:
    name = decision.status.get("rayClusterName")
    if job.spec.cluster_selector:
        decision.events.append(
            EventNote(
                "Warning",
                "RayClusterNotFound",
                f"RayCluster {job.namespace}/{name} set in the clusterSelector is not found. It must be created manually",
                "Validate",
            )
        )
        decision.error = (
            f"clusterSelector mode is enabled, but RayCluster {job.namespace}/{name} is not found"
        )
        return True
    decision.actions.append(Action.CREATE_CLUSTER)
    return False


def _head_pod_lost(job: RayJob, facts: Facts, status: Status) -> bool:
    """Fails the attempt when the head pod it runs on is gone or going (see the module docstring)."""
    head = ((status.get("rayClusterStatus") or {}).get("head") or {}).get("podName") or ""
    if not head or head in facts.cluster.live_heads:
        return False
    if job.spec.submission_mode == JobSubmissionMode.SIDECAR_MODE and not facts.cluster.live_heads:
        return False  # upstream's own row: "Ray head pod not found."
    replaced = (
        f", replaced by {', '.join(sorted(facts.cluster.live_heads))}" if facts.cluster.live_heads else ""
    )
    _fail(
        status,
        HEAD_POD_LOST,
        f"The Ray head pod {job.namespace}/{head} of RayCluster {job.namespace}/{status.get('rayClusterName')} "
        f"was lost while the job was running{replaced}; the job's driver ran there",
    )
    return True


def _suspend_requested(job: RayJob, status: Status) -> bool:
    if not job.spec.suspend:
        return False
    status["jobDeploymentStatus"] = JobDeploymentStatus.SUSPENDING.value
    return True


def _past_active_deadline(job: RayJob, facts: Facts, status: Status) -> bool:
    return _past_deadline(
        job.spec.active_deadline_seconds,
        "activeDeadlineSeconds",
        JobFailedReason.DEADLINE_EXCEEDED,
        facts,
        status,
    )


def _past_pre_running_deadline(job: RayJob, facts: Facts, status: Status) -> bool:
    return _past_deadline(
        job.spec.pre_running_deadline_seconds,
        "preRunningDeadlineSeconds",
        JobFailedReason.PRE_RUNNING_DEADLINE_EXCEEDED,
        facts,
        status,
    )


def _past_deadline(
    seconds: int | None, field: str, reason: JobFailedReason, facts: Facts, status: Status
) -> bool:
    """Fails the attempt once `seconds` have passed since status.startTime, with upstream's message."""
    started = parse_time(status.get("startTime"))
    if seconds is None or started is None or facts.now < started + timedelta(seconds=seconds):
        return False
    message = (
        f"The RayJob has passed the {field}. StartTime: {times.go_string(started)}. "
        f"{field[0].upper()}{field[1:]}: {seconds}"
    )
    _fail(status, reason, message)
    return True


def _past_transition_grace_period(facts: Facts, settings: Settings, status: Status) -> bool:
    ended = parse_time((status.get("rayJobInfo") or {}).get("endTime"))
    if not job_terminal(status.get("jobStatus")) or ended is None:
        return False
    if facts.now < ended + timedelta(seconds=settings.transition_grace_period):
        return False
    failed = status.get("jobStatus") == JobStatus.FAILED
    status["jobDeploymentStatus"] = (
        JobDeploymentStatus.FAILED.value if failed else JobDeploymentStatus.COMPLETE.value
    )
    status["reason"] = JobFailedReason.JOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_EXCEEDED.value
    status["message"] = (
        "JobDeploymentStatus does not transition to Complete or Failed within the grace period after "
        "JobStatus reaches a terminal state."
    )
    return True


def _past_status_check_timeout(facts: Facts, settings: Settings, status: Status) -> bool:
    since = parse_time(status.get("jobStatusCheckFailureStartTime"))
    if since is None or facts.now < since + timedelta(seconds=settings.status_check_timeout):
        return False
    _fail(
        status,
        JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED,
        f"Job status checks have been failing since {_date_time(since)}; exceeded timeout of "
        f"{settings.status_check_timeout}s",
    )
    return True


def _fail(status: Status, reason: str, message: str) -> None:
    status["jobDeploymentStatus"] = JobDeploymentStatus.FAILED.value
    status["reason"] = str(reason)
    status["message"] = message


def _retry_if_allowed(job: RayJob, status: Status) -> None:
    """upstream `checkBackoffLimitAndUpdateStatusIfNeeded` (the common tail of every breaking pass)."""
    failed = int(status.get("failed") or 0)
    succeeded = int(status.get("succeeded") or 0)
    deployment = status.get("jobDeploymentStatus")
    if deployment == JobDeploymentStatus.FAILED:
        failed += 1
    if status.get("jobStatus") == JobStatus.SUCCEEDED and deployment == JobDeploymentStatus.COMPLETE:
        succeeded += 1
    status["failed"] = failed
    status["succeeded"] = succeeded
    if (
        deployment == JobDeploymentStatus.FAILED
        and failed < job.spec.backoff_limit + 1
        and status.get("reason")
        not in (JobFailedReason.DEADLINE_EXCEEDED, JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED)
    ):
        status["jobDeploymentStatus"] = JobDeploymentStatus.RETRYING.value


_CLUSTER_STATUS_KEYS = (
    "state",
    "reason",
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
    "endpoints",
    "head",
    "conditions",
)


def _changed(old: Status, new: Status) -> bool:
    """upstream `updateRayJobStatus`'s test: only these fields make a status worth writing."""
    for key in ("jobStatus", "jobDeploymentStatus"):
        if (old.get(key) or "") != (new.get(key) or ""):
            return True
    if parse_time(old.get("jobStatusCheckFailureStartTime")) != parse_time(
        new.get("jobStatusCheckFailureStartTime")
    ):
        return True
    old_cluster = old.get("rayClusterStatus") or {}
    new_cluster = new.get("rayClusterStatus") or {}
    return any(_zero(old_cluster.get(key)) != _zero(new_cluster.get(key)) for key in _CLUSTER_STATUS_KEYS)


def _zero(value: Any) -> Any:
    """Go compares zero values: an absent field equals its empty value."""
    return value if value not in (None, "", 0, {}, []) else None


def _set_or_drop(status: Status, key: Literal["reason", "message"], value: str) -> None:
    if value:
        status[key] = value
    elif key in status:
        del status[key]
