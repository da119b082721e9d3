"""A RayService's status, computed from what a pass saw (upstream `calculateStatus`,
`calculateConditions`, `isSuspend…`): promotion, a new pending cluster, serve endpoints, the `Ready` /
`UpgradeInProgress` conditions with upstream's reasons and messages, the initializing timeout, and whether
the status changed enough to be written.

Pure functions over status dicts (wire form): `calculate` takes the pass's `Facts` (the clusters, Serve's
answers, endpoint counts, the time, all read before) and returns the Events to record.

Beyond upstream: when a cluster or its Serve applications cannot become ready, the `why` a pass found
(a pod's failure, Serve's own message) is appended to the message of the condition that is waiting on it
(`Ready` while nothing serves, `UpgradeInProgress` during an upgrade); reasons stay upstream's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kuberay.api import constants
from kuberay.api.rayservice import RayService, RayServiceStatusDict, ServeSide, ServeSideDict, ServiceStatus
from kuberay.api.rayservice import RayServiceConditionReason as Reason
from kuberay.api.rayservice import RayServiceConditionType as Type
from kuberay.builders import service as service_builder
from kuberay.controllers.rayservice import clusters, incremental
from kuberay.controllers.rayservice.incremental import ACTIVE, PENDING
from kuberay.controllers.rayservice.serving import ServeOutcome
from kuberay.runtime.events import WARNING
from kubesemantics import times
from kubesemantics.conditions import is_condition_true, set_condition
from kubesemantics.goparse import GoParseError, atoi, format_seconds, parse_duration

JSON = dict[str, Any]
Note = tuple[str, str, str]  # an Event's (type, reason, message)

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


@dataclass(frozen=True)
class Seen:
    """One of the pass's clusters as the pass left it (written this pass, maybe not cached yet), Serve's
    answer from it, and why it does not serve yet ("" when nothing lasting stands in the way)."""

    cluster: JSON | None = None
    outcome: ServeOutcome | None = None
    why: str = ""


@dataclass(frozen=True)
class Facts:
    """What a pass saw, for its status: the RayService, the time, its active and pending clusters, the
    cluster its Services point at (`selected`), the HTTPRoute's weights, and the cache's view of the
    clusters the status names and of the serve endpoints."""

    service: RayService
    now: datetime
    incremental: bool
    new_name: Callable[[], str]  # a new pending cluster's name
    active: Seen = Seen()
    pending: Seen = Seen()
    selected: str = ""
    route_weights: Mapping[str, int] | None = None
    cached: Mapping[str, JSON] = field(default_factory=dict)  # the clusters named in the status
    endpoints: Mapping[str, int] = field(default_factory=dict)  # ready serve endpoints, by serve Service
    new_on_change: bool = True  # whether a changed spec makes a new cluster (`zero_downtime_enabled`)
    abandoned_hash: str | None = None  # the goal hash of the last upgrade abandoned for its timeout

    @property
    def stamp(self) -> str:
        return times.format_time(self.now)

    @property
    def generation(self) -> int:
        return self.service.metadata.generation or 0

    @property
    def goal(self) -> JSON:
        return clusters.goal_spec(self.service)


def calculate(status: RayServiceStatusDict, facts: Facts) -> list[Note]:
    """The status after a pass (upstream `calculateStatus`), in place; the Events it calls for."""
    notes: list[Note] = []
    status["observedGeneration"] = facts.generation
    sides: tuple[tuple[ServeSide, Seen], ...] = ((ACTIVE, facts.active), (PENDING, facts.pending))
    for side, seen in sides:
        entry = incremental.entry(status, side)
        cluster, outcome = seen.cluster, seen.outcome
        if cluster is not None and cluster.get("status"):
            entry["rayClusterStatus"] = cluster["status"]
        if outcome is not None and outcome.applications:
            entry["applicationStatuses"] = outcome.applications
        else:
            entry.pop("applicationStatuses", None)
    pending = facts.pending.cluster
    why_pending, why_active = facts.pending.why, facts.active.why
    pending_serving = False
    if facts.incremental:
        if facts.route_weights is not None:
            incremental.record_weights(
                status, facts.route_weights, facts.stamp, pending_exists=pending is not None
            )
        # The first cluster is promoted once it serves; later ones once traffic and capacity have moved.
        outcome = facts.pending.outcome
        first = not _name(status, ACTIVE) and outcome is not None and outcome.ready
        if first or incremental.should_promote(status, pending is not None):
            promote(status)
            pending, why_pending = None, ""
        pending_head_ready = pending is not None and is_condition_true(
            pending.get("status") or {}, "HeadPodReady"
        )
        if incremental.rollback_complete(status, pending_head_ready):
            incremental.finish_rollback(status, facts.stamp)
            pending, why_pending = None, ""
    elif facts.selected:
        active_name, pending_name = _name(status, ACTIVE), _name(status, PENDING)
        pending_serving = facts.selected == pending_name and facts.selected != active_name
        if pending_serving:
            promote(status)
            why_pending = ""
    active_name, pending_name = _name(status, ACTIVE), _name(status, PENDING)
    if _new_cluster_due(status, facts, pending_serving=pending_serving):
        entry = ServeSideDict(rayClusterName=facts.new_name())
        if facts.incremental:
            entry["targetCapacity"] = 0 if active_name else 100
        status[PENDING] = entry
    status["numServeEndpoints"] = _endpoints(status, facts)
    why_not_ready = why_active or why_pending if not active_name else why_active
    if why_pending:
        notes.append((WARNING, "PendingRayClusterNotReady", why_pending))
    if why_not_ready and not status["numServeEndpoints"]:
        notes.append((WARNING, "RayServiceNotReady", why_not_ready))
    set_conditions(status, facts.stamp, why_not_ready=why_not_ready, why_pending_not_ready=why_pending)
    notes.extend(_initializing_timeout(status, facts))
    stamp_generation(status, facts.generation)
    return notes


def _name(status: RayServiceStatusDict, side: ServeSide) -> str:
    return status.get(side, {}).get("rayClusterName") or ""


def _new_cluster_due(status: RayServiceStatusDict, facts: Facts, *, pending_serving: bool) -> bool:
    if pending_serving or is_true(status, Type.ROLLBACK_IN_PROGRESS):
        return False
    active_name = _name(status, ACTIVE)
    cached = facts.cached
    if not clusters.should_prepare_new_cluster(
        cached.get(active_name),
        cached.get(_name(status, PENDING)),
        facts.goal,
        new_on_change=facts.new_on_change,
    ):
        return False
    # An upgrade abandoned for its timeout is not tried again until the spec changes.
    return not (active_name and facts.abandoned_hash == clusters.cluster_hash(facts.goal))


def _endpoints(status: RayServiceStatusDict, facts: Facts) -> int:
    names = [service_builder.rayservice_serve_service_name(facts.service)]
    if facts.incremental:
        names = [
            n + constants.SERVE_SERVICE_SUFFIX for n in (_name(status, ACTIVE), _name(status, PENDING)) if n
        ]
    return sum(facts.endpoints.get(name, 0) for name in names)


def _initializing_timeout(status: RayServiceStatusDict, facts: Facts) -> list[Note]:
    """`ray.io/initializing-timeout`: a RayService still initializing past it fails for good."""
    if (status.get("numServeEndpoints") or 0) > 0:
        return []
    ready = condition(status, Type.READY)
    if ready is None or ready.get("status") != "False" or ready.get("reason") != Reason.INITIALIZING:
        return []
    timeout = _timeout(facts.service.annotations.get(constants.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION))
    if timeout is None or not ready.get("lastTransitionTime"):
        return []
    since = times.parse_time(str(ready["lastTransitionTime"]))
    elapsed = facts.now - since
    if elapsed < timeout:
        return []
    status[ACTIVE] = {}
    status[PENDING] = {}
    message = (
        f"RayService failed to become ready within the configured timeout of {_go_duration(timeout)}. "
        f"Time spent initializing: {_go_duration(elapsed)}"
    )
    conditions = status.setdefault("conditions", [])
    set_condition(conditions, Type.READY, "False", Reason.INITIALIZING_TIMEOUT, message, facts.stamp)
    note = (
        f"RayService initializing timeout exceeded after {_go_duration(elapsed)} (configured timeout: "
        f"{_go_duration(timeout)})"
    )
    return [(WARNING, "RayServiceInitializingTimeout", note)]


def _timeout(value: str | None) -> timedelta | None:
    if not value:
        return None
    try:
        seconds = parse_duration(value) / 1e9
    except GoParseError:
        try:
            seconds = float(atoi(value))
        except GoParseError:
            return None
    return timedelta(seconds=seconds) if seconds > 0 else None


def _go_duration(delta: timedelta) -> str:
    return format_seconds(int(delta.total_seconds()))


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
    status: RayServiceStatusDict,
    now: str,
    *,
    why_not_ready: str = "",
    why_pending_not_ready: str = "",
) -> None:
    """`Ready` and `UpgradeInProgress` from the endpoint count and the cluster names, as upstream's `calculateConditions`."""
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


def stamp_generation(status: RayServiceStatusDict, generation: int) -> None:
    status["observedGeneration"] = generation
    for entry in status.get("conditions") or ():
        entry["observedGeneration"] = generation


def _base_message(message: str, base: str) -> str:
    return base if message.startswith(base) else message


def _with_why(message: str, why: str) -> str:
    return f"{message}: {why}" if why else message


def promote(status: RayServiceStatusDict) -> None:
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


def reset_for_suspend(status: RayServiceStatusDict) -> None:
    status["activeServiceStatus"] = {}
    status["pendingServiceStatus"] = {}
    status["numServeEndpoints"] = 0
    status["serviceStatus"] = ServiceStatus.NOT_RUNNING
