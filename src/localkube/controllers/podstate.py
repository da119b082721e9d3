"""What the workload controllers read off a pod, and the clock they read it with.

Kubernetes' controllers agree on a few notions: a pod is *active* while it is neither terminating nor
finished, *ready* while its `Ready` condition is True, and *available* once it has been ready for the
owner's `minReadySeconds`. Timestamps are RFC 3339 in whole seconds, as the API server stores them.
"""

from __future__ import annotations

import datetime
from typing import Any

from kubesemantics import times
from kubesemantics.conditions import find_condition


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def restarts(pod: dict[str, Any]) -> int:
    return sum(
        int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or []
    )


def terminating(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def active(pod: dict[str, Any]) -> bool:
    """Counts towards its owner's replicas: not being deleted and not finished."""
    return not terminating(pod) and phase(pod) not in ("Succeeded", "Failed")


def _ready_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    ready = find_condition((pod.get("status") or {}).get("conditions") or [], "Ready")
    return ready if ready is not None and ready.get("status") == "True" else None


def ready(pod: dict[str, Any]) -> bool:
    return _ready_condition(pod) is not None


def ready_since(pod: dict[str, Any]) -> datetime.datetime | None:
    """When the pod last became ready; None when it is not ready."""
    condition = _ready_condition(pod)
    if condition is None:
        return None
    transition = condition.get("lastTransitionTime")
    if not isinstance(transition, str):
        return datetime.datetime.min.replace(tzinfo=datetime.UTC)
    try:
        return times.parse_time(transition)
    except ValueError:
        return datetime.datetime.min.replace(tzinfo=datetime.UTC)


def available_in(pod: dict[str, Any], min_ready_seconds: int, moment: datetime.datetime) -> float | None:
    """Seconds until an active, ready pod counts as available (0 when it already does); None when it is
    not active and ready, so no amount of waiting makes it available."""
    since = ready_since(pod)
    if since is None or not active(pod):
        return None
    return max(0.0, (since - moment).total_seconds() + min_ready_seconds)


def available(pod: dict[str, Any], min_ready_seconds: int, moment: datetime.datetime) -> bool:
    return available_in(pod, min_ready_seconds, moment) == 0.0
