"""Why a RayCluster's pods cannot start, in the kubelet's or scheduler's words (shared by the RayJob
controller, which ends Initializing on it, and the RayService controller, which reports it).

Invariant: `startup_problem` reports only states a kubelet or scheduler would keep reporting (image pull
errors, crash loops, unschedulable, a failed pod): never a state a healthy pod passes through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kuberay.api import constants

# Container waiting reasons that do not go away by waiting (the kubelet keeps retrying, and keeps failing).
STUCK_WAITING_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
# Restarts after which a container that keeps exiting non-zero counts as crash-looping.
CRASH_LOOP_RESTARTS = 2


@dataclass(frozen=True)
class StartupProblem:
    """Why a pod of the cluster is not starting, in the kubelet's or scheduler's words."""

    pod: str
    reason: str
    message: str

    def describe(self) -> str:
        return f"pod {self.pod}: {self.reason}" + (f": {self.message}" if self.message else "")


def startup_problem(pods: Iterable[Mapping[str, Any]]) -> StartupProblem | None:
    """The first lasting start-up failure among a cluster's pods (head pods first), if any."""
    ordered = sorted(
        pods,
        key=lambda pod: (
            ((pod.get("metadata") or {}).get("labels") or {}).get(constants.RAY_NODE_TYPE_LABEL)
            != constants.HEAD_NODE,
            (pod.get("metadata") or {}).get("name") or "",
        ),
    )
    for pod in ordered:
        problem = _pod_problem(pod)
        if problem is not None:
            return problem
    return None


def _pod_problem(pod: Mapping[str, Any]) -> StartupProblem | None:
    name = (pod.get("metadata") or {}).get("name") or ""
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        return StartupProblem(name, status.get("reason") or "Failed", status.get("message") or "")
    for condition in status.get("conditions") or ():
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return StartupProblem(name, "Unschedulable", condition.get("message") or "")
    for container_status in [
        *(status.get("initContainerStatuses") or ()),
        *(status.get("containerStatuses") or ()),
    ]:
        waiting = (container_status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_WAITING_REASONS:
            return StartupProblem(
                name,
                waiting["reason"],
                f"container {container_status.get('name')}: {waiting.get('message') or ''}".rstrip(": "),
            )
        # Between two crashes a looping container is briefly running or terminated, not waiting.
        last = (container_status.get("lastState") or {}).get("terminated") or {}
        restarts = int(container_status.get("restartCount") or 0)
        if restarts >= CRASH_LOOP_RESTARTS and last.get("exitCode"):
            return StartupProblem(
                name,
                "CrashLoopBackOff",
                f"container {container_status.get('name')} restarted {restarts} times; last exit code "
                f"{last['exitCode']} ({last.get('reason') or 'Error'})",
            )
    return None
