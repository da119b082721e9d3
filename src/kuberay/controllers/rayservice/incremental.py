"""`NewClusterWithIncrementalUpgrade` decisions (upstream `calculateTrafficRoutedPercent`,
`reconcileServeTargetCapacity`, `checkIfNeedTargetCapacityUpdate`, the rollback checks): pure functions of
the RayService status (wire form) and the pass's facts.

The upgrade alternates two moves until the pending cluster holds all capacity and traffic:
- Serve capacity: the pending cluster's `target_capacity` grows by `maxSurgePercent` while the two sum to
  at most 100, then the active one's shrinks by as much (each only once traffic has caught up);
- traffic: the HTTPRoute's pending weight grows by `stepSizePercent` every `intervalSeconds`, up to the
  pending capacity.
A rollback (the goal spec changed away from the pending cluster's) runs the same moves backwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kuberay.api import constants
from kuberay.api.rayservice import ClusterUpgradeOptions, RayServiceStatusDict, ServeSide, ServeSideDict
from kuberay.api.rayservice import RayServiceConditionReason as Reason
from kuberay.api.rayservice import RayServiceConditionType as Type
from kuberay.controllers.rayservice import clusters
from kubesemantics import times
from kubesemantics.conditions import is_condition_true, remove_condition, set_condition

JSON = dict[str, Any]
ACTIVE: Final = "activeServiceStatus"
PENDING: Final = "pendingServiceStatus"
REVERTED = "Goal state reverted to original cluster, rolling back."
CHANGED = "Goal state changed mid-upgrade, rolling back to original cluster."
ROLLBACK_COMPLETE = "Rollback complete, active Ray cluster exists and no pending Ray cluster"


def _side(status: RayServiceStatusDict, side: ServeSide) -> ServeSideDict:
    return status.get(side) or ServeSideDict()


def entry(status: RayServiceStatusDict, side: ServeSide) -> ServeSideDict:
    """The status entry of one side, made when missing."""
    if side == ACTIVE:
        return status.setdefault(ACTIVE, ServeSideDict())
    return status.setdefault(PENDING, ServeSideDict())


def rolling_back(status: RayServiceStatusDict) -> bool:
    return is_condition_true(status, Type.ROLLBACK_IN_PROGRESS)


def decide_rollback(
    status: RayServiceStatusDict,
    active: Mapping[str, Any],
    pending: Mapping[str, Any],
    goal: Mapping[str, Any],
    now: str,
) -> None:
    """Starts or cancels a rollback from where the goal spec now points."""
    goal_hash = clusters.cluster_hash(goal)
    conditions: list[JSON] = status.setdefault("conditions", [])
    hash_key = constants.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION

    def stamped(cluster: Mapping[str, Any]) -> str | None:
        return ((cluster.get("metadata") or {}).get("annotations") or {}).get(hash_key)

    if goal_hash == stamped(active):
        if not rolling_back(status):
            set_condition(
                conditions,
                Type.ROLLBACK_IN_PROGRESS,
                "True",
                Reason.DESIRED_CLUSTER_SPEC_CHANGED,
                REVERTED,
                now,
            )
    elif goal_hash == stamped(pending):
        remove_condition(conditions, Type.ROLLBACK_IN_PROGRESS)
    else:
        set_condition(
            conditions, Type.ROLLBACK_IN_PROGRESS, "True", Reason.DESIRED_CLUSTER_SPEC_CHANGED, CHANGED, now
        )


def route_weights(
    status: RayServiceStatusDict,
    options: ClusterUpgradeOptions,
    *,
    pending_exists: bool,
    pending_ready: bool,
    now: datetime,
) -> tuple[int, int]:
    """(active weight, pending weight) for this pass's HTTPRoute."""
    active, pending = _side(status, ACTIVE), _side(status, PENDING)
    w_active = int(active.get("trafficRoutedPercent", 100))
    w_pending = int(pending.get("trafficRoutedPercent", 0))
    if not pending_exists:
        return w_active, w_pending
    tc_pending = int(pending.get("targetCapacity", 0))
    tc_active = int(active.get("targetCapacity", 100))
    back = rolling_back(status)
    if (not back and w_pending == tc_pending) or (back and w_active == tc_active):
        return w_active, w_pending
    last = (active if back else pending).get("lastTrafficMigratedTime")
    if last:
        since = times.parse_time(str(last))
        if (now - since).total_seconds() < options.interval_seconds:
            return w_active, w_pending
    step = options.step_size_percent
    if back:
        w_active = min(100, w_active + step, tc_active)
        return w_active, 100 - w_active
    if pending_ready:
        w_pending = min(100, w_pending + step, tc_pending)
        return 100 - w_pending, w_pending
    return w_active, w_pending


def record_weights(
    status: RayServiceStatusDict, weights: Mapping[str, int], stamp: str, *, pending_exists: bool
) -> None:
    """Traffic percentages read back from the route; the migration time moves when a value changed."""
    sides: list[ServeSide] = [ACTIVE, PENDING] if pending_exists else [ACTIVE]
    for side in sides:
        values = entry(status, side)
        name = values.get("rayClusterName")
        if not name:
            continue
        weight = next((w for backend, w in weights.items() if name in backend), None)
        if weight is None:
            continue
        if values.get("trafficRoutedPercent") != weight:
            values["trafficRoutedPercent"] = weight
            values["lastTrafficMigratedTime"] = stamp


@dataclass(frozen=True)
class CapacityStep:
    """Set `cluster`'s Serve `target_capacity` to `goal` (side: which status entry it is)."""

    side: ServeSide
    goal: int


def capacity_step(status: RayServiceStatusDict, options: ClusterUpgradeOptions) -> CapacityStep | None:
    """The next target-capacity move, if traffic has caught up with the last one. Fills in unset
    capacities (active 100, pending 0), as upstream writes them."""
    active, pending = entry(status, ACTIVE), entry(status, PENDING)
    active.setdefault("targetCapacity", 100)
    pending.setdefault("targetCapacity", 0)
    tc_active, tc_pending = int(active["targetCapacity"]), int(pending["targetCapacity"])
    surge = options.max_surge_percent
    if rolling_back(status):
        if tc_active != int(active.get("trafficRoutedPercent", 0)):
            return None
        if tc_active + tc_pending > 100:
            return CapacityStep(PENDING, max(0, tc_pending - surge))
        return CapacityStep(ACTIVE, min(100, tc_active + surge))
    if tc_pending != int(pending.get("trafficRoutedPercent", 0)):
        return None
    if tc_active + tc_pending > 100:
        return CapacityStep(ACTIVE, max(0, tc_active - surge))
    return CapacityStep(PENDING, min(100, tc_pending + surge))


def capacity_update_needed(status: RayServiceStatusDict) -> bool:
    active, pending = _side(status, ACTIVE), _side(status, PENDING)
    if not (active.get("rayClusterName") and pending.get("rayClusterName")):
        return False
    fields = ("targetCapacity", "trafficRoutedPercent")
    if any(side.get(f) is None for side in (active, pending) for f in fields):
        return True
    if rolling_back(status):
        return not (active["targetCapacity"] == 100 and pending["targetCapacity"] == 0)
    return not (active["targetCapacity"] == 0 and pending["targetCapacity"] == 100)


def should_promote(status: RayServiceStatusDict, pending_exists: bool) -> bool:
    if not is_condition_true(status, Type.UPGRADE_IN_PROGRESS) or rolling_back(status) or not pending_exists:
        return False
    active, pending = _side(status, ACTIVE), _side(status, PENDING)
    return active.get("targetCapacity") == 0 and pending.get("trafficRoutedPercent") == 100


def rollback_complete(status: RayServiceStatusDict, pending_head_ready: bool) -> bool:
    if not rolling_back(status):
        return False
    active, pending = _side(status, ACTIVE), _side(status, PENDING)
    if active.get("targetCapacity") != 100 or active.get("trafficRoutedPercent") != 100:
        return False
    return not pending_head_ready or (
        pending.get("targetCapacity", 0) == 0 and pending.get("trafficRoutedPercent", 0) == 0
    )


def finish_rollback(status: RayServiceStatusDict, now: str) -> None:
    status[PENDING] = {}
    conditions: list[JSON] = status.setdefault("conditions", [])
    remove_condition(conditions, Type.ROLLBACK_IN_PROGRESS)
    set_condition(
        conditions, Type.UPGRADE_IN_PROGRESS, "False", Reason.NO_PENDING_CLUSTER, ROLLBACK_COMPLETE, now
    )
