"""Every transition of the RayJob state machine, one table row each (spec §1.3-§1.9)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from kuberay.api.features import FeatureGates
from kuberay.controllers.podproblems import StartupProblem
from kuberay.controllers.rayjob.decision import (
    Action,
    ClusterFacts,
    Facts,
    Observation,
    Settings,
    SubmitterFacts,
)
from kuberay.controllers.rayjob.state import REQUEUE_SECONDS, step
from kuberay.rayclient.dashboard import DashboardError, JobInfo, JobNotFound
from unit.controllers.rayjob.jobs import ADDRESS, NOT_READY, NOW, READY, at, rayjob, running

A = Action
PULL = StartupProblem(
    "job-abcde-head-x", "ImagePullBackOff", 'container ray-head: Back-off pulling image "nope"'
)
INFO_START, INFO_END = 1767268800000, 1767268805000  # 2026-01-01T12:00:00Z and 12:00:05Z


def info(status: str, message: str = "msg", end: bool = False) -> Observation:
    return Observation(
        JobInfo("job-xyz", status, message, start_time=INFO_START, end_time=INFO_END if end else None)
    )


@dataclass
class Case:
    job: Any
    facts: Facts = field(default_factory=lambda: Facts(NOW))
    expect: dict[str, Any] = field(default_factory=dict)  # status fields (None: absent)
    actions: list[Action] = field(default_factory=list)
    write: bool = True
    requeue: float | None = REQUEUE_SECONDS
    error: str | None = None
    events: list[str] = field(default_factory=list)
    settings: Settings = field(default_factory=Settings)


def F(cluster: ClusterFacts = READY, **kw: Any) -> Facts:
    return Facts(NOW, cluster=cluster, **kw)


K8S_DONE = SubmitterFacts(exists=True, finished_at=NOW - timedelta(seconds=1))
K8S_RUNNING = SubmitterFacts(exists=True)
INITIALIZING = {
    "jobDeploymentStatus": "Initializing",
    "jobId": "job-xyz",
    "rayClusterName": "job-abcde",
    "startTime": at(-10),
}

CASES: dict[str, Case] = {
    # --- managedBy, deletion, validation -------------------------------------------------------------------
    "managed by kueue: untouched": Case(
        rayjob(managedBy="kueue.x-k8s.io/multikueue"), write=False, requeue=None
    ),
    "deleted while running: stop the job, drop the finalizer": Case(
        rayjob(running(), metadata={"deletionTimestamp": at(0)}),
        actions=[A.STOP_JOB, A.STOP_POLLING, A.REMOVE_FINALIZER],
        write=False,
    ),
    "deleted after it finished: nothing to stop": Case(
        rayjob(
            running(jobStatus="SUCCEEDED", jobDeploymentStatus="Complete"),
            metadata={"deletionTimestamp": at(0)},
        ),
        actions=[A.STOP_POLLING, A.REMOVE_FINALIZER],
        write=False,
    ),
    "invalid spec: ValidationFailed with a Warning": Case(
        rayjob(suspend=True),
        expect={
            "jobDeploymentStatus": "ValidationFailed",
            "reason": "ValidationFailed",
            "message": "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is "
            "not allowed to be suspended",
        },
        requeue=None,
        events=[
            "Warning InvalidRayJobSpec Validate ns/job: The RayJob spec is invalid: a RayJob "
            "with shutdownAfterJobFinishes set to false is not allowed to be suspended"
        ],
    ),
    "invalid status: Waiting outside InteractiveMode": Case(
        rayjob({"jobDeploymentStatus": "Waiting"}),
        expect={"jobDeploymentStatus": "ValidationFailed"},
        requeue=None,
        events=[
            "Warning InvalidRayJobStatus Validate ns/job: The RayJob status is invalid: JobDeploymentStatus "
            "cannot be `Waiting` when SubmissionMode is not InteractiveMode"
        ],
    ),
    "invalid metadata: name too long": Case(
        rayjob(metadata={"name": "x" * 48}),
        expect={"jobDeploymentStatus": "ValidationFailed"},
        requeue=None,
        events=[
            f"Warning InvalidRayJobMetadata Validate ns/{'x' * 48}: The RayJob metadata is invalid: RayJob name "
            "should be no more than 47 characters"
        ],
    ),
    "ValidationFailed and valid again: start over": Case(
        rayjob({"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed", "message": "m"}),
        expect={"jobDeploymentStatus": "", "reason": None, "message": None},
    ),
    # --- New ----------------------------------------------------------------------------------------------
    "New: finalizer, names, Initializing, no jobStatus yet (upstream's is omitempty)": Case(
        rayjob(metadata={"finalizers": []}),
        expect={
            "jobDeploymentStatus": "Initializing",
            "jobStatus": None,
            "startTime": at(0),
            "jobId": re.compile(r"job-[bcdfghjklmnpqrstvwxz2456789]{5}"),
            "rayClusterName": re.compile(r"job-[bcdfghjklmnpqrstvwxz2456789]{5}"),
        },
        actions=[A.ADD_FINALIZER],
    ),
    "New: spec.jobId and clusterSelector name the job and the cluster": Case(
        rayjob(jobId="mine", clusterSelector={"ray.io/cluster": "shared"}),
        expect={"jobId": "mine", "rayClusterName": "shared", "jobDeploymentStatus": "Initializing"},
    ),
    "New: InteractiveMode has no job id yet": Case(
        rayjob(submissionMode="InteractiveMode"),
        expect={"jobId": None, "jobDeploymentStatus": "Initializing"},
    ),
    # --- Initializing -------------------------------------------------------------------------------------
    "Initializing: suspend": Case(
        rayjob(INITIALIZING, suspend=True, shutdownAfterJobFinishes=True),
        F(NOT_READY),
        expect={"jobDeploymentStatus": "Suspending"},
    ),
    "Initializing: activeDeadlineSeconds passed, never retried": Case(
        rayjob(INITIALIZING, activeDeadlineSeconds=10, backoffLimit=3),
        F(NOT_READY),
        expect={
            "jobDeploymentStatus": "Failed",
            "reason": "DeadlineExceeded",
            "failed": 1,
            "endTime": at(0),
            "message": "The RayJob has passed the activeDeadlineSeconds. StartTime: 2026-01-01 11:59:50 "
            "+0000 UTC. ActiveDeadlineSeconds: 10",
        },
    ),
    "Initializing: activeDeadlineSeconds not yet": Case(
        rayjob(INITIALIZING, activeDeadlineSeconds=11),
        F(NOT_READY),
        expect={"jobDeploymentStatus": "Initializing", "rayClusterStatus": NOT_READY.status},
    ),
    "Initializing: preRunningDeadlineSeconds passed, retried": Case(
        rayjob(INITIALIZING, preRunningDeadlineSeconds=5, backoffLimit=1),
        F(NOT_READY),
        expect={
            "jobDeploymentStatus": "Retrying",
            "reason": "PreRunningDeadlineExceeded",
            "failed": 1,
            "endTime": None,
        },
    ),
    "Initializing: no cluster yet, create it": Case(
        rayjob(INITIALIZING),
        F(ClusterFacts(exists=False)),
        actions=[A.CREATE_CLUSTER],
        write=False,
        expect={"jobDeploymentStatus": "Initializing"},
    ),
    "Initializing: clusterSelector names a missing cluster": Case(
        rayjob({**INITIALIZING, "rayClusterName": "shared"}, clusterSelector={"ray.io/cluster": "shared"}),
        F(ClusterFacts(exists=False)),
        write=False,
        requeue=None,
        error="clusterSelector mode is enabled, but RayCluster ns/shared is not found",
        events=[
            "Warning RayClusterNotFound Validate RayCluster ns/shared set in the clusterSelector is not found. "
            "It must be created manually"
        ],
    ),
    "Initializing: cluster not ready, its status copied": Case(
        rayjob(INITIALIZING), F(NOT_READY), expect={"rayClusterStatus": NOT_READY.status}
    ),
    "Initializing: unchanged cluster status is not written": Case(
        rayjob({**INITIALIZING, "rayClusterStatus": NOT_READY.status}), F(NOT_READY), write=False
    ),
    "Initializing: image pull back-off within the start timeout, wait": Case(
        rayjob({**INITIALIZING, "startTime": at(-299)}),
        F(ClusterFacts(exists=True, problem=PULL)),
        expect={"jobDeploymentStatus": "Initializing"},
        write=False,
    ),
    "Initializing: image pull back-off past the start timeout, fail": Case(
        rayjob({**INITIALIZING, "startTime": at(-300)}),
        F(ClusterFacts(exists=True, problem=PULL)),
        expect={
            "jobDeploymentStatus": "Failed",
            "reason": "ClusterStartFailed",
            "endTime": at(0),
            "message": "The RayCluster ns/job-abcde did not start within 300s: pod job-abcde-head-x: "
            'ImagePullBackOff: container ray-head: Back-off pulling image "nope"',
        },
    ),
    "Initializing: past the start timeout but nothing stuck, wait": Case(
        rayjob({**INITIALIZING, "startTime": at(-3000)}),
        F(ClusterFacts(exists=True)),
        write=False,
        expect={"jobDeploymentStatus": "Initializing"},
    ),
    "Initializing: start timeout disabled waits forever, as upstream": Case(
        rayjob({**INITIALIZING, "startTime": at(-3000)}),
        F(ClusterFacts(exists=True, problem=PULL)),
        write=False,
        settings=Settings(cluster_start_timeout=None),
    ),
    "Initializing: ready, K8sJobMode creates the submitter": Case(
        rayjob(INITIALIZING),
        F(),
        actions=[A.CREATE_SUBMITTER],
        expect={"jobDeploymentStatus": "Running", "dashboardURL": ADDRESS},
    ),
    "Initializing: ready, the head it will run on recorded": Case(
        rayjob({**INITIALIZING, "rayClusterStatus": {"state": ""}}),
        F(
            ClusterFacts(
                exists=True, status={"state": "ready", "head": {"podName": "h"}}, dashboard_address=ADDRESS
            )
        ),
        actions=[A.CREATE_SUBMITTER],
        expect={
            "jobDeploymentStatus": "Running",
            "rayClusterStatus": {"state": "ready", "head": {"podName": "h"}},
        },
    ),
    "Initializing: ready, an existing submitter Job is reused": Case(
        rayjob(INITIALIZING), F(submitter=K8S_RUNNING), expect={"jobDeploymentStatus": "Running"}
    ),
    "Initializing: ready, HTTPMode submits nothing yet": Case(
        rayjob(INITIALIZING, submissionMode="HTTPMode"), F(), expect={"jobDeploymentStatus": "Running"}
    ),
    "Initializing: ready, InteractiveMode waits for a job id": Case(
        rayjob({**INITIALIZING, "jobId": None}, submissionMode="InteractiveMode"),
        F(),
        expect={"jobDeploymentStatus": "Waiting", "dashboardURL": ADDRESS},
    ),
    "Initializing: SidecarMode submitter finished before the head was ever ready": Case(
        rayjob(INITIALIZING, submissionMode="SidecarMode"),
        F(ClusterFacts(exists=True, dashboard_address=ADDRESS), submitter=K8S_DONE),
        expect={"jobDeploymentStatus": "Running", "dashboardURL": ADDRESS},
    ),
    "Initializing: SidecarMode submitter still running, wait for the cluster": Case(
        rayjob(INITIALIZING, submissionMode="SidecarMode"),
        F(ClusterFacts(exists=True, dashboard_address=ADDRESS), submitter=K8S_RUNNING),
        expect={"jobDeploymentStatus": "Initializing"},
        write=False,
    ),
    "Initializing: ready without a dashboard port": Case(
        rayjob(INITIALIZING),
        F(ClusterFacts(exists=True, status={"state": "ready"})),
        write=False,
        requeue=None,
        error="dashboard port is not found for RayCluster ns/job-abcde",
    ),
    # --- Waiting ------------------------------------------------------------------------------------------
    "Waiting: no spec.jobId yet, no write": Case(
        rayjob(
            {**INITIALIZING, "jobDeploymentStatus": "Waiting", "jobId": None},
            submissionMode="InteractiveMode",
        ),
        F(),
        write=False,
    ),
    "Waiting: spec.jobId given, Running": Case(
        rayjob(
            {**INITIALIZING, "jobDeploymentStatus": "Waiting", "jobId": None},
            submissionMode="InteractiveMode",
            jobId="raysubmit_1",
        ),
        F(),
        expect={"jobDeploymentStatus": "Running", "jobId": "raysubmit_1"},
    ),
    "Waiting: preRunningDeadlineSeconds passed": Case(
        rayjob(
            {**INITIALIZING, "jobDeploymentStatus": "Waiting"},
            submissionMode="InteractiveMode",
            preRunningDeadlineSeconds=1,
        ),
        F(),
        expect={"jobDeploymentStatus": "Failed", "reason": "PreRunningDeadlineExceeded"},
    ),
    # --- Running ------------------------------------------------------------------------------------------
    "Running: suspend": Case(
        rayjob(running(), suspend=True, shutdownAfterJobFinishes=True),
        F(submitter=K8S_RUNNING),
        expect={"jobDeploymentStatus": "Suspending"},
    ),
    "Running: activeDeadlineSeconds passed": Case(
        rayjob(running(), activeDeadlineSeconds=60),
        F(submitter=K8S_RUNNING),
        expect={"jobDeploymentStatus": "Failed", "reason": "DeadlineExceeded"},
    ),
    "Running: terminal job status stuck past the grace period": Case(
        rayjob(running(jobStatus="SUCCEEDED", rayJobInfo={"endTime": at(-300)}), submissionMode="HTTPMode"),
        F(),
        expect={
            "jobDeploymentStatus": "Complete",
            "reason": "JobDeploymentStatusTransitionGracePeriodExceeded",
            "succeeded": 1,
        },
    ),
    "Running: status checks failing past the timeout, never retried": Case(
        rayjob(running(jobStatusCheckFailureStartTime=at(-300)), submissionMode="HTTPMode", backoffLimit=2),
        F(),
        expect={
            "jobDeploymentStatus": "Failed",
            "reason": "JobStatusCheckTimeoutExceeded",
            "failed": 1,
            "message": "Job status checks have been failing since 2026-01-01 11:55:00; exceeded timeout of 300s",
        },
    ),
    "Running: cluster deleted behind our back, re-created": Case(
        rayjob(running(), submissionMode="HTTPMode"),
        F(ClusterFacts(exists=False)),
        actions=[A.CREATE_CLUSTER],
        write=False,
    ),
    "Running: K8sJobMode without its submitter Job": Case(
        rayjob(running()),
        F(),
        actions=[A.RECONCILE_HEAD_SERVICE],
        write=False,
        requeue=None,
        error="failed to get the submitter Job ns/job: not found",
    ),
    "Running: submitter finished 30 s ago, job not terminal: FAILED": Case(
        rayjob(running()),
        F(submitter=SubmitterFacts(exists=True, finished_at=NOW - timedelta(seconds=30))),
        actions=[A.RECONCILE_HEAD_SERVICE],
        expect={
            "jobDeploymentStatus": "Failed",
            "jobStatus": "FAILED",
            "reason": "JobDeploymentStatusTransitionGracePeriodExceeded",
            "message": "The RayJob submitter finished at 2026-01-01 11:59:30 but the ray job did not reach "
            "terminal state within 30s",
        },
    ),
    "Running: submitter Job failed: SubmissionFailed": Case(
        rayjob(running()),
        F(
            submitter=SubmitterFacts(
                exists=True, failure="Job submission has failed. Reason: BackoffLimitExceeded. Message: x"
            )
        ),
        actions=[A.RECONCILE_HEAD_SERVICE],
        expect={
            "jobDeploymentStatus": "Failed",
            "reason": "SubmissionFailed",
            "message": "Job submission has failed. Reason: BackoffLimitExceeded. Message: x",
        },
    ),
    "Running: submitter failed after the Ray job failed: AppFailed": Case(
        rayjob(running(jobStatus="FAILED", message="boom")),
        F(submitter=SubmitterFacts(exists=True, failure="f")),
        actions=[A.RECONCILE_HEAD_SERVICE],
        expect={"jobDeploymentStatus": "Failed", "reason": "AppFailed", "message": "boom"},
    ),
    "Running: SidecarMode without a head pod": Case(
        rayjob(running(), submissionMode="SidecarMode"),
        F(submitter=SubmitterFacts(head_pod_missing=True)),
        actions=[A.RECONCILE_HEAD_SERVICE],
        expect={"jobDeploymentStatus": "Failed", "reason": "AppFailed", "message": "Ray head pod not found."},
    ),
    "Running: its head pod replaced under it: HeadPodLost, naming both": Case(
        rayjob(running(rayClusterStatus={"state": "ready", "head": {"podName": "job-abcde-head-x"}})),
        F(ClusterFacts(exists=True, status={"state": "ready"}, live_heads=frozenset({"job-abcde-head-y"}))),
        expect={
            "jobDeploymentStatus": "Failed",
            "reason": "HeadPodLost",
            "message": "The Ray head pod ns/job-abcde-head-x of RayCluster ns/job-abcde was lost while the job "
            "was running, replaced by job-abcde-head-y; the job's driver ran there",
            "failed": 1,
            "endTime": at(0),
        },
    ),
    "Running: its head pod gone, retries left: Retrying": Case(
        rayjob(running(rayClusterStatus={"head": {"podName": "job-abcde-head-x"}}), backoffLimit=1),
        F(submitter=K8S_RUNNING),
        expect={"jobDeploymentStatus": "Retrying", "reason": "HeadPodLost", "failed": 1},
    ),
    "Running: its head pod still there: keep polling": Case(
        rayjob(running(rayClusterStatus={"state": "ready", "head": {"podName": "job-abcde-head-x"}})),
        F(
            ClusterFacts(exists=True, status={"state": "ready"}, live_heads=frozenset({"job-abcde-head-x"})),
            submitter=K8S_RUNNING,
        ),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        write=False,
    ),
    "Running: SidecarMode head gone for good: upstream's message": Case(
        rayjob(
            running(rayClusterStatus={"head": {"podName": "job-abcde-head-x"}}), submissionMode="SidecarMode"
        ),
        F(submitter=SubmitterFacts(head_pod_missing=True)),
        actions=[A.RECONCILE_HEAD_SERVICE],
        expect={"jobDeploymentStatus": "Failed", "reason": "AppFailed", "message": "Ray head pod not found."},
    ),
    "Running: nothing observed yet, keep polling": Case(
        rayjob(running()), F(submitter=K8S_RUNNING), actions=[A.RECONCILE_HEAD_SERVICE, A.POLL], write=False
    ),
    "Running: clusterSelector owns no head Service": Case(
        rayjob(running(), clusterSelector={"ray.io/cluster": "shared"}),
        F(submitter=K8S_RUNNING),
        actions=[A.POLL],
        write=False,
    ),
    "Running: submitter still running and the job unknown yet": Case(
        rayjob(running(jobStatus="")),
        F(submitter=K8S_RUNNING, observation=Observation(error=JobNotFound("x"))),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        write=False,
    ),
    "Running: HTTPMode job resubmitted, the failure timer cleared": Case(
        rayjob(running(jobStatusCheckFailureStartTime=at(-10)), submissionMode="HTTPMode"),
        F(observation=Observation(submitted=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Running", "jobStatusCheckFailureStartTime": None, "reason": None},
    ),
    "Running: HTTPMode job resubmitted, no failure timer to clear": Case(
        rayjob(running(), submissionMode="HTTPMode"),
        F(observation=Observation(submitted=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        write=False,
    ),
    "Running: HTTPMode resubmission failed, the failure timer starts": Case(
        rayjob(running(), submissionMode="HTTPMode"),
        F(observation=Observation(error=DashboardError("refused"), submitted=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Running", "jobStatusCheckFailureStartTime": at(0)},
        events=["Warning JobStatusCheckFailed Poll Failed to get the Ray job's status: refused"],
    ),
    "Running: HTTPMode resubmission failed again, no write": Case(
        rayjob(running(jobStatusCheckFailureStartTime=at(-10)), submissionMode="HTTPMode"),
        F(observation=Observation(error=DashboardError("refused"), submitted=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        write=False,
    ),
    "Running: submitter done but the job is unknown": Case(
        rayjob(running()),
        F(submitter=K8S_DONE, observation=Observation(error=JobNotFound("x"))),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={
            "jobDeploymentStatus": "Failed",
            "reason": "AppFailed",
            "message": "Submitter completed but Ray job not found in RayCluster.",
        },
    ),
    "Running: dashboard unreachable, the failure timer starts": Case(
        rayjob(running(), submissionMode="HTTPMode"),
        F(observation=Observation(error=DashboardError("down"))),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobStatusCheckFailureStartTime": at(0)},
        events=["Warning JobStatusCheckFailed Poll Failed to get the Ray job's status: down"],
    ),
    "Running: dashboard still unreachable, no write": Case(
        rayjob(running(jobStatusCheckFailureStartTime=at(-10)), submissionMode="HTTPMode"),
        F(observation=Observation(error=DashboardError("down"))),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        write=False,
    ),
    "Running: job running, the failure timer cleared": Case(
        rayjob(running(jobStatusCheckFailureStartTime=at(-10)), submissionMode="HTTPMode"),
        F(observation=info("RUNNING", "Job is running.")),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={
            "jobDeploymentStatus": "Running",
            "jobStatusCheckFailureStartTime": None,
            "message": "Job is running.",
            "rayJobInfo": {"startTime": "2026-01-01T12:00:00Z"},
            "rayClusterStatus": {"state": "ready"},
        },
    ),
    "Running: HTTPMode job succeeded: Complete": Case(
        rayjob(running(), submissionMode="HTTPMode"),
        F(observation=info("SUCCEEDED", "Job finished successfully.", True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={
            "jobDeploymentStatus": "Complete",
            "jobStatus": "SUCCEEDED",
            "succeeded": 1,
            "failed": 0,
            "endTime": at(0),
            "reason": None,
            "rayJobInfo": {"startTime": "2026-01-01T12:00:00Z", "endTime": "2026-01-01T12:00:05Z"},
        },
    ),
    "Running: job succeeded but the submitter Job still runs": Case(
        rayjob(running()),
        F(submitter=K8S_RUNNING, observation=info("SUCCEEDED", end=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Running", "jobStatus": "SUCCEEDED"},
    ),
    "Running: job succeeded and the submitter finished": Case(
        rayjob(running()),
        F(submitter=K8S_DONE, observation=info("SUCCEEDED", end=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Complete"},
    ),
    "Running: job failed: Failed, AppFailed, Ray's message": Case(
        rayjob(running(), submissionMode="HTTPMode"),
        F(observation=info("FAILED", "exit code 3", True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={
            "jobDeploymentStatus": "Failed",
            "reason": "AppFailed",
            "message": "exit code 3",
            "failed": 1,
        },
    ),
    "Running: job failed with retries left: Retrying": Case(
        rayjob(running(failed=1), submissionMode="HTTPMode", backoffLimit=2),
        F(observation=info("FAILED", end=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Retrying", "failed": 2, "endTime": None},
    ),
    "Running: last attempt failed: Failed": Case(
        rayjob(running(failed=2), submissionMode="HTTPMode", backoffLimit=2),
        F(observation=info("FAILED", end=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Failed", "failed": 3},
    ),
    "Running: a job status this operator does not know yet is not terminal": Case(
        rayjob(running(jobStatus="SUSPENDED_BY_RAY"), submissionMode="HTTPMode"),
        F(observation=info("SUSPENDED_BY_RAY")),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Running", "jobStatus": "SUSPENDED_BY_RAY"},
    ),
    "Running: job stopped: Complete": Case(
        rayjob(running(), submissionMode="HTTPMode"),
        F(observation=info("STOPPED", end=True)),
        actions=[A.RECONCILE_HEAD_SERVICE, A.POLL],
        expect={"jobDeploymentStatus": "Complete", "succeeded": 0},
    ),
    # --- Suspending / Retrying / Suspended ------------------------------------------------------------------
    "Suspending: delete cluster and submitter, wait": Case(
        rayjob(running(jobDeploymentStatus="Suspending"), suspend=True, shutdownAfterJobFinishes=True),
        F(submitter=K8S_RUNNING),
        actions=[A.STOP_POLLING, A.DELETE_CLUSTER, A.DELETE_SUBMITTER],
        write=False,
    ),
    "Suspending: deletions in progress, wait": Case(
        rayjob(running(jobDeploymentStatus="Suspending"), suspend=True, shutdownAfterJobFinishes=True),
        F(ClusterFacts(exists=True, deleting=True), submitter=SubmitterFacts(exists=True, deleting=True)),
        actions=[A.STOP_POLLING],
        write=False,
    ),
    "Suspending: all gone, Suspended and reset (even if unsuspended meanwhile)": Case(
        rayjob(running(jobDeploymentStatus="Suspending", failed=1, rayJobInfo={"startTime": at(-5)})),
        F(ClusterFacts(exists=False)),
        actions=[A.STOP_POLLING],
        expect={
            "jobDeploymentStatus": "Suspended",
            "jobStatus": None,  # left out, as upstream's omitempty field (found by benchmarks/peer)
            "jobId": None,
            "rayClusterName": None,
            "dashboardURL": None,
            "rayJobInfo": {},
            "rayClusterStatus": {},
            "failed": 1,
            "startTime": at(-60),
        },
    ),
    "Retrying: all gone, New again": Case(
        rayjob(running(jobDeploymentStatus="Retrying", failed=1), backoffLimit=1, submissionMode="HTTPMode"),
        F(ClusterFacts(exists=False)),
        actions=[A.STOP_POLLING],
        expect={"jobDeploymentStatus": "", "jobId": None, "rayClusterName": None, "failed": 1},
    ),
    "Retrying: HTTPMode has no submitter Job to delete": Case(
        rayjob(running(jobDeploymentStatus="Retrying"), backoffLimit=1, submissionMode="HTTPMode"),
        F(submitter=K8S_RUNNING),
        actions=[A.STOP_POLLING, A.DELETE_CLUSTER],
        write=False,
    ),
    "Suspended: stays, no requeue": Case(
        rayjob({"jobDeploymentStatus": "Suspended"}, suspend=True, shutdownAfterJobFinishes=True),
        write=False,
        requeue=None,
    ),
    "Suspended: resumed, New": Case(
        rayjob({"jobDeploymentStatus": "Suspended"}, shutdownAfterJobFinishes=True),
        expect={"jobDeploymentStatus": "", "jobStatus": None},
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_transition(name: str) -> None:
    case = CASES[name]
    decision = step(case.job, case.facts, case.settings, random.Random(7))
    for key, want in case.expect.items():
        got = decision.status.get(key)
        if isinstance(want, re.Pattern):
            assert got is not None and want.fullmatch(got), (key, got)
        else:
            assert got == want, (key, got)
    assert decision.actions == case.actions
    assert decision.write == case.write
    assert decision.error == case.error
    if case.error is None:
        assert decision.requeue_after == case.requeue
    assert [f"{e.type} {e.reason} {e.action} {e.message}" for e in decision.events] == case.events


def test_each_retry_attempt_gets_new_names_and_start_time() -> None:
    settings, rng = Settings(), random.Random(1)
    first = step(rayjob(), Facts(NOW), settings, rng).status
    retried = rayjob({**first, "jobDeploymentStatus": "", "jobId": None, "rayClusterName": None, "failed": 1})
    later = NOW + timedelta(seconds=40)
    second = step(retried, Facts(later), settings, rng).status
    assert second["rayClusterName"] != first["rayClusterName"] and second["jobId"] != first["jobId"]
    assert second["startTime"] != first["startTime"] and second["failed"] == 1


def test_spec_job_id_is_reused_by_every_attempt() -> None:
    statuses = [step(rayjob({"failed": n}, jobId="fixed"), Facts(NOW), Settings()).status for n in (0, 1)]
    assert [s["jobId"] for s in statuses] == ["fixed", "fixed"]


def test_deletion_policy_gate_off_makes_deletion_strategy_invalid() -> None:
    job = rayjob(
        deletionStrategy={"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteNone"}}
    )
    gates = FeatureGates.parse("RayJobDeletionPolicy=false")
    decision = step(job, Facts(NOW), Settings(gates=gates))
    assert decision.status["jobDeploymentStatus"] == "ValidationFailed"


def test_http_mode_job_resubmitted_on_every_check_outlives_the_status_check_timeout() -> None:
    """A dashboard that keeps forgetting an HTTPMode job gets it resubmitted each time; every successful
    submission resets the failure timer, so the job stays Running past the timeout (upstream keeps it so)."""
    settings = Settings(status_check_timeout=60)
    status = running(jobStatusCheckFailureStartTime=at(-50))
    for seconds in (0, 30, 61, 200):
        moment = NOW + timedelta(seconds=seconds)
        decision = step(
            rayjob(status, submissionMode="HTTPMode"),
            Facts(moment, cluster=READY, observation=Observation(submitted=True)),
            settings,
        )
        status = decision.status
        assert status["jobDeploymentStatus"] == "Running", seconds
        assert "jobStatusCheckFailureStartTime" not in status


# --- batch scheduler actions ------------------------------------------------------------------------------------

BATCH = Settings(batch_scheduler=True)


def test_batch_scheduling_comes_before_the_cluster_is_made() -> None:
    decision = step(rayjob(INITIALIZING), F(ClusterFacts(exists=False)), BATCH)
    assert decision.actions[:2] == [A.BATCH_SCHEDULE, A.CREATE_CLUSTER]
    assert (
        A.BATCH_SCHEDULE not in step(rayjob(INITIALIZING), F(ClusterFacts(exists=False)), Settings()).actions
    )


def test_no_batch_scheduling_once_suspend_or_a_deadline_ends_initializing() -> None:
    suspended = step(
        rayjob(INITIALIZING, suspend=True, shutdownAfterJobFinishes=True),
        F(ClusterFacts(exists=False)),
        BATCH,
    )
    assert suspended.status["jobDeploymentStatus"] == "Suspending"
    assert A.BATCH_SCHEDULE not in suspended.actions
    late = step(rayjob(INITIALIZING, activeDeadlineSeconds=1), F(ClusterFacts(exists=False)), BATCH)
    assert late.status["jobDeploymentStatus"] == "Failed"
    assert A.BATCH_SCHEDULE not in late.actions


def test_batch_cleanup_after_release_and_at_the_end_of_a_finished_pass() -> None:
    releasing = running(jobDeploymentStatus="Suspending")
    waiting = step(rayjob(releasing, suspend=True, shutdownAfterJobFinishes=True), F(READY), BATCH)
    assert A.CLEANUP_BATCH_SCHEDULER not in waiting.actions  # the cluster is still there
    released = step(
        rayjob(releasing, suspend=True, shutdownAfterJobFinishes=True), F(ClusterFacts(exists=False)), BATCH
    )
    assert released.actions[-1] == A.CLEANUP_BATCH_SCHEDULER
    assert released.status["jobDeploymentStatus"] == "Suspended"
    done = running(jobDeploymentStatus="Complete", jobStatus="SUCCEEDED", endTime=at(-5))
    finished = step(rayjob(done, shutdownAfterJobFinishes=True), F(READY), BATCH)
    assert finished.actions[-1] == A.CLEANUP_BATCH_SCHEDULER
    assert A.CLEANUP_BATCH_SCHEDULER not in step(rayjob(done), F(READY), Settings()).actions
