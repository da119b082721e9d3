"""Status conditions as `meta.SetStatusCondition` keeps them, on the wire form: `lastTransitionTime` changes
only with `status`, reason and message are updated in place, new conditions are appended.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kuberay.api.raycluster import RayClusterConditionType

JSON = dict[str, Any]
Obj = Mapping[str, Any]


def find_condition(conditions: Iterable[Obj], kind: str) -> Obj | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def is_condition_true(status: Obj, kind: str) -> bool:
    found = find_condition(status.get("conditions") or (), kind)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: list[JSON], kind: str, status: str, reason: str, message: str, now: str
) -> None:
    """`meta.SetStatusCondition` (observedGeneration left 0, as upstream leaves it)."""
    kind, status, reason = str(kind), str(status), str(reason)  # plain strings, not the vocabulary enums
    for condition in conditions:
        if condition.get("type") == kind:
            if condition.get("status") != status:
                condition["status"] = status
                condition["lastTransitionTime"] = now
            condition["reason"] = reason
            condition["message"] = message
            return
    conditions.append(
        {"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
    )


def remove_condition(conditions: list[JSON], kind: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != kind]


def suspend_status(status: Obj) -> str:
    """The first of `RayClusterSuspending` / `RayClusterSuspended` that is True, else ""."""
    for condition in status.get("conditions") or ():
        if (
            condition.get("type")
            in (
                RayClusterConditionType.SUSPENDING,
                RayClusterConditionType.SUSPENDED,
            )
            and condition.get("status") == "True"
        ):
            return str(condition["type"])
    return ""
