"""What the submitter says about a submission (upstream `checkSubmitterAndUpdateStatusIfNeeded`). Pure.

K8sJobMode: the `batch/v1` Job named as the RayJob. It failed when a `Failed` condition is true; it finished
at the transition time of its first true `Complete` or `Failed` condition.

SidecarMode: the `ray-job-submitter` container of the cluster's one head pod. Without gate
`SidecarSubmitterRestart` it failed when it terminated non-zero; with the gate (the container restarts on
failure) it failed only once it has restarted twice and is not currently terminated with exit code 0. It
finished when it is terminated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kuberay.api import constants
from kuberay.controllers.errors import ReconcileError
from kuberay.controllers.rayjob.decision import SubmitterFacts
from kuberay.controllers.rayjob.state import parse_time

# The restart limit of a sidecar submitter (upstream passes the K8s Job default; the submitterConfig cannot be
# set in SidecarMode).
SIDECAR_MAX_RESTARTS = 2


class SubmitterInspectionError(ReconcileError):
    """The submitter cannot be judged (e.g. more than one head pod)."""


def from_job(job: Mapping[str, Any] | None) -> SubmitterFacts:
    """The facts of a K8sJobMode submitter Job (None: not found)."""
    if job is None:
        return SubmitterFacts()
    deleting = bool(job["metadata"].get("deletionTimestamp"))
    conditions = (job.get("status") or {}).get("conditions") or ()
    failure = None
    for condition in conditions:
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            failure = (
                f"Job submission has failed. Reason: {condition.get('reason') or ''}. "
                f"Message: {condition.get('message') or ''}"
            )
            break
    finished_at = None
    for condition in conditions:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            finished_at = parse_time(condition.get("lastTransitionTime"))
            break
    return SubmitterFacts(exists=True, deleting=deleting, failure=failure, finished_at=finished_at)


def from_head_pods(head_pods: Sequence[Mapping[str, Any]], *, restart_gate: bool) -> SubmitterFacts:
    """The facts of a SidecarMode submitter, from the cluster's head pods."""
    if len(head_pods) > 1:
        names = ", ".join(pod["metadata"]["name"] for pod in head_pods)
        raise SubmitterInspectionError(f"found more than one head pod: {names}")
    if not head_pods:
        return SubmitterFacts(head_pod_missing=True)
    statuses = (head_pods[0].get("status") or {}).get("containerStatuses") or ()
    container = next((c for c in statuses if c.get("name") == constants.SUBMITTER_CONTAINER_NAME), None)
    if container is None:
        return SubmitterFacts(exists=True)
    terminated = (container.get("state") or {}).get("terminated")
    finished_at = parse_time(terminated.get("finishedAt")) if terminated else None
    failure = None
    if not restart_gate:
        if terminated and terminated.get("exitCode", 0) != 0:
            failure = (
                f"Ray head pod container {constants.SUBMITTER_CONTAINER_NAME} terminated with exit code "
                f"{terminated['exitCode']}: {terminated.get('reason') or ''}"
            )
    elif (container.get("lastState") or {}).get("terminated"):
        succeeded_now = terminated is not None and terminated.get("exitCode", 0) == 0
        if not succeeded_now and int(container.get("restartCount") or 0) >= SIDECAR_MAX_RESTARTS:
            failure = (
                f"Ray head pod submitter container {constants.SUBMITTER_CONTAINER_NAME} terminated after "
                "exceeding the maximum restart count"
            )
    return SubmitterFacts(exists=True, failure=failure, finished_at=finished_at)
