"""Whether the Ray autoscaler sidecar of a RayCluster's head is running, from the head pod's container
statuses (beyond upstream).

With `enableInTreeAutoscaling: true` the cluster scales only while the `autoscaler` container runs. When it
cannot (a bad command or image, or Ray's autoscaler exiting after repeated API errors such as 403s from
missing RBAC: v1 exits after 5 failed updates, the config reader after 5 failed reads), the head pod may
still be Running with Ray up, so nothing else in the status says the cluster has stopped scaling:
`calculate_status` reports it as the condition `AutoscalerFailure` (status True, the kubelet's reason,
a message naming the head pod with the exit code and restart count) and removes the condition once the
container runs again. Under v1 the sidecar restarts and shows `CrashLoopBackOff`; under v2 the head's
restart policy is `Never`, so it stays terminated (reason `Error`, or `Completed` for exit code 0, which is
a failure too: the autoscaler never returns).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kuberay.api import constants
from kuberay.controllers.raycluster import podstate

Obj = Mapping[str, Any]

CONDITION = "AutoscalerFailure"


@dataclass(frozen=True)
class AutoscalerProblem:
    """Why the autoscaler sidecar is not running, in the kubelet's words."""

    reason: str
    message: str


def autoscaler_problem(head: Obj, namespace: str) -> AutoscalerProblem | None:
    """The sidecar's failure on `head`, or None while it runs, starts, or the pod has no sidecar."""
    for container in (head.get("status") or {}).get("containerStatuses") or ():
        if container.get("name") == constants.AUTOSCALER_CONTAINER_NAME:
            return _problem(container, f"{namespace}/{podstate.pod_name(head)}")
    return None


def _problem(container: Obj, pod: str) -> AutoscalerProblem | None:
    state = container.get("state") or {}
    last = (container.get("lastState") or {}).get("terminated") or {}
    waiting = state.get("waiting") or {}
    terminated = state.get("terminated") or {}
    if terminated:
        reason, ended = str(terminated.get("reason") or "Terminated"), terminated
    elif waiting.get("reason") in podstate.FAILING_WAITING_REASONS:
        reason, ended = str(waiting["reason"]), last
    else:
        return None
    parts = [f"the autoscaler container of head Pod {pod} is not running: {reason}"]
    if ended:
        parts.append(f"exit code {ended.get('exitCode')}")
        if ended.get("message"):
            parts.append(str(ended["message"]).strip())
    if waiting.get("message"):
        parts.append(str(waiting["message"]))
    if restarts := container.get("restartCount"):
        parts.append(f"restarted {restarts} times")
    return AutoscalerProblem(reason, "; ".join(parts))
