"""Status conditions on the wire form: lists of `{"type", "status", "lastTransitionTime", ...}` dicts.

The helpers of apimachinery's `meta` package for `[]metav1.Condition` (`FindStatusCondition`,
`IsStatusConditionTrue`, `SetStatusCondition`, `RemoveStatusCondition`), and the rule every controller's
conditions share, built-in kinds' included (`transition_time`): `lastTransitionTime` moves only when the
condition's status does. Times are passed in as metav1.Time texts; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

Condition = TypeVar("Condition", bound=Mapping[str, Any])


def find_condition(conditions: Iterable[Condition], kind: str) -> Condition | None:
    """`meta.FindStatusCondition`: the condition of that type, None when absent."""
    return next((c for c in conditions if c.get("type") == kind), None)


def is_condition_true(status: Mapping[str, Any], kind: str) -> bool:
    """`meta.IsStatusConditionTrue` over an object's `status.conditions`."""
    found = find_condition(status.get("conditions") or (), kind)
    return found is not None and found.get("status") == "True"


def transition_time(previous: Mapping[str, Any] | None, status: str, now: str) -> str:
    """The `lastTransitionTime` of a condition now at `status`: the previous one's while the status is
    unchanged, else `now`."""
    if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
        return str(previous["lastTransitionTime"])
    return now


def set_condition(
    conditions: list[dict[str, Any]], kind: str, status: str, reason: str, message: str, now: str
) -> None:
    """`meta.SetStatusCondition` (observedGeneration left 0): reason and message are updated in place, the
    transition time only with the status, and a new condition is appended."""
    kind, status, reason = str(kind), str(status), str(reason)  # plain strings, not a vocabulary's enums
    existing = find_condition(conditions, kind)
    if existing is None:
        conditions.append(
            {"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
        )
        return
    existing["lastTransitionTime"] = transition_time(existing, status, now)
    existing.update(status=status, reason=reason, message=message)


def remove_condition(conditions: list[dict[str, Any]], kind: str) -> None:
    """`meta.RemoveStatusCondition`."""
    conditions[:] = [c for c in conditions if c.get("type") != kind]
