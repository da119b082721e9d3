"""Replica arithmetic of a RayCluster's worker groups (upstream's `GetWorkerGroupDesiredReplicas` and the
`desired`/`min`/`maxWorkerReplicas` sums), on the spec's wire form.

Counts are pods, not replicas: a multi-host replica counts `numOfHosts` pods. Sums are clamped to int32, as
upstream's status fields are int32. A suspended group wants no pods and is left out of the min and max.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)


def as_int(value: Any, default: int) -> int:
    """An integer field of the wire form, or `default` when it is unset or not an integer."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


def clamp32(value: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, value))


def group_desired_replicas(group: Obj) -> int:
    """Upstream's `GetWorkerGroupDesiredReplicas`: pods (not replicas) the group should run."""
    if group.get("suspend") is True:
        return 0
    low, high = as_int(group.get("minReplicas"), 0), as_int(group.get("maxReplicas"), INT32_MAX)
    replicas = group.get("replicas")
    wanted = low if not isinstance(replicas, int) or replicas < low else replicas
    wanted = min(wanted, high)
    return clamp32(wanted * as_int(group.get("numOfHosts"), 1))


def worker_groups(spec: Obj) -> list[Obj]:
    return list(spec.get("workerGroupSpecs") or [])


def desired_worker_replicas(spec: Obj) -> int:
    return clamp32(sum(group_desired_replicas(g) for g in worker_groups(spec)))


def min_worker_replicas(spec: Obj) -> int:
    return clamp32(
        sum(
            as_int(g.get("minReplicas"), 0) * as_int(g.get("numOfHosts"), 1)
            for g in worker_groups(spec)
            if g.get("suspend") is not True
        )
    )


def max_worker_replicas(spec: Obj) -> int:
    return clamp32(
        sum(
            as_int(g.get("maxReplicas"), INT32_MAX) * as_int(g.get("numOfHosts"), 1)
            for g in worker_groups(spec)
            if g.get("suspend") is not True
        )
    )


def free_indices(used: set[int], count: int) -> list[int]:
    """The `count` lowest non-negative integers not in `used`."""
    free: list[int] = []
    candidate = 0
    while len(free) < count:
        if candidate not in used:
            free.append(candidate)
        candidate += 1
    return free
