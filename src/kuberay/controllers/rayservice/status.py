"""A RayService's status, computed from what a pass saw (upstream `calculateStatus`,
`calculateConditions`, `isSuspend…`): promotion, serve endpoints, the `Ready` / `UpgradeInProgress`
conditions with upstream's reasons and messages, and whether the status changed enough to be written.

Pure functions over status dicts (wire form); the time is passed in.

Beyond upstream: when a cluster or its Serve applications cannot become ready, the `why` a pass found
(a pod's failure, Serve's own message) is appended to the message of the condition that is waiting on it
(`Ready` while nothing serves, `UpgradeInProgress` during an upgrade); reasons stay upstream's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from kuberay.api.rayservice import RayServiceConditionReason as Reason
from kuberay.api.rayservice import RayServiceConditionType as Type
from kuberay.api.rayservice import ServiceStatus
from kubesemantics.conditions import set_condition

JSON = dict[str, Any]

INITIALIZING_MESSAGE = "RayService is initializing"
READY_MESSAGE = "Number of serve endpoints is greater than 0"
ZERO_ENDPOINTS_MESSAGE = "Number of serve endpoints dropped to 0"
BOTH_MESSAGE = "Both active and pending Ray clusters exist"
NO_PENDING_MESSAGE = "Active Ray cluster exists and no pending Ray cluster"
NO_ACTIVE_MESSAGE = (
    "No active Ray cluster exists, and the RayService is not initializing. Please open a GitHub issue in the "
    "KubeRay repository."
)
# Fields whose change alone does not make a status write (upstream compares everything else).
_UNCOMPARED = ("rayClusterStatus", "lastTrafficMigratedTime")


def condition(status: Mapping[str, Any], kind: str) -> JSON | None:
    for entry in status.get("conditions") or ():
        if entry.get("type") == kind:
            return entry  # type: ignore[no-any-return]
    return None


def is_true(status: Mapping[str, Any], kind: str) -> bool:
    found = condition(status, kind)
    return found is not None and found.get("status") == "True"


def has_reason(status: Mapping[str, Any], kind: str, reason: str) -> bool:
    found = condition(status, kind)
    return found is not None and found.get("status") == "False" and found.get("reason") == reason


def serve_endpoints(slices: Iterable[Mapping[str, Any]]) -> int:
    """Distinct pods (by `targetRef.uid`) that are ready endpoints of the serve Service's slices."""
    uids = {
        (endpoint.get("targetRef") or {}).get("uid")
        for endpoint_slice in slices
        for endpoint in endpoint_slice.get("endpoints") or ()
        if (endpoint.get("conditions") or {}).get("ready") is True
    }
    uids.discard(None)
    return len(uids)


def set_conditions(
    status: JSON,
    now: str,
    *,
    why_not_ready: str = "",
    why_pending_not_ready: str = "",
) -> None:
    """`Ready` and `UpgradeInProgress` from the endpoint count and the cluster names (§3.11)."""
    conditions: list[JSON] = status.setdefault("conditions", [])
    if not conditions:
        set_condition(conditions, Type.READY, "False", Reason.INITIALIZING, INITIALIZING_MESSAGE, now)
        set_condition(
            conditions, Type.UPGRADE_IN_PROGRESS, "False", Reason.INITIALIZING, INITIALIZING_MESSAGE, now
        )
    if (status.get("numServeEndpoints") or 0) > 0:
        set_condition(conditions, Type.READY, "True", Reason.NON_ZERO_SERVE_ENDPOINTS, READY_MESSAGE, now)
    else:
        ready = condition(status, Type.READY) or {}
        if ready.get("status") == "True":
            message = _with_why(ZERO_ENDPOINTS_MESSAGE, why_not_ready)
            set_condition(conditions, Type.READY, "False", Reason.ZERO_SERVE_ENDPOINTS, message, now)
        elif ready.get("reason") in (Reason.INITIALIZING, Reason.ZERO_SERVE_ENDPOINTS):
            base = (
                INITIALIZING_MESSAGE if ready.get("reason") == Reason.INITIALIZING else ZERO_ENDPOINTS_MESSAGE
            )
            ready["message"] = _with_why(_base_message(ready.get("message") or "", base), why_not_ready)
    active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
    pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
    if active and pending:
        message = _with_why(BOTH_MESSAGE, why_pending_not_ready)
        set_condition(
            conditions,
            Type.UPGRADE_IN_PROGRESS,
            "True",
            Reason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            message,
            now,
        )
    elif active:
        upgrade = condition(status, Type.UPGRADE_IN_PROGRESS) or {}
        # A finished rollback or an abandoned upgrade keeps its own message until the next change.
        if upgrade.get("reason") != Reason.NO_PENDING_CLUSTER or upgrade.get("status") != "False":
            set_condition(
                conditions,
                Type.UPGRADE_IN_PROGRESS,
                "False",
                Reason.NO_PENDING_CLUSTER,
                NO_PENDING_MESSAGE,
                now,
            )
    else:
        upgrade = condition(status, Type.UPGRADE_IN_PROGRESS) or {}
        if upgrade.get("reason") not in (Reason.INITIALIZING, Reason.INITIALIZING_TIMEOUT):
            set_condition(
                conditions,
                Type.UPGRADE_IN_PROGRESS,
                "Unknown",
                Reason.NO_ACTIVE_CLUSTER,
                NO_ACTIVE_MESSAGE,
                now,
            )
    status["serviceStatus"] = (
        ServiceStatus.RUNNING if is_true(status, Type.READY) else ServiceStatus.NOT_RUNNING
    )


def stamp_generation(status: JSON, generation: int) -> None:
    status["observedGeneration"] = generation
    for entry in status.get("conditions") or ():
        entry["observedGeneration"] = generation


def _base_message(message: str, base: str) -> str:
    return base if message.startswith(base) else message


def _with_why(message: str, why: str) -> str:
    return f"{message}: {why}" if why else message


def promote(status: JSON) -> None:
    """The pending cluster becomes the active one; pending is emptied."""
    status["activeServiceStatus"] = status.get("pendingServiceStatus") or {}
    status["pendingServiceStatus"] = {}


def changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a write is due: anything but the clusters' own statuses and the update time differs."""
    return _comparable(old) != _comparable(new)


def _comparable(status: Mapping[str, Any]) -> JSON:
    out = {k: copy.deepcopy(v) for k, v in status.items() if k != "lastUpdateTime"}
    for side in ("activeServiceStatus", "pendingServiceStatus"):
        entry = {
            k: v for k, v in (out.get(side) or {}).items() if k not in _UNCOMPARED and v not in (None, {})
        }
        out[side] = entry
    out["numServeEndpoints"] = out.get("numServeEndpoints") or 0
    out["serviceStatus"] = out.get("serviceStatus") or ""
    out["conditions"] = sorted(
        (tuple(sorted((k, str(v)) for k, v in c.items())) for c in out.get("conditions") or ()),
    )
    return out


def reset_for_suspend(status: JSON) -> None:
    status["activeServiceStatus"] = {}
    status["pendingServiceStatus"] = {}
    status["numServeEndpoints"] = 0
    status["serviceStatus"] = ServiceStatus.NOT_RUNNING
