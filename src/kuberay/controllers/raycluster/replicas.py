"""Replica arithmetic of a RayCluster's worker groups (upstream's `GetWorkerGroupDesiredReplicas` and the
`desired`/`min`/`maxWorkerReplicas` sums), on the spec's wire form.

Counts are pods, not replicas: a multi-host replica counts `numOfHosts` pods. Sums are clamped to int32, as
upstream's status fields are int32. A suspended group wants no pods and is left out of the min and max.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.schedulers import sizing
from kuberay.schedulers.sizing import as_int as as_int

Obj = Mapping[str, Any]

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)


def clamp32(value: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, value))


def group_desired_replicas(group: Obj) -> int:
    """Upstream's `GetWorkerGroupDesiredReplicas`: pods (not replicas) the group should run."""
    return clamp32(sizing.group_desired_replicas(group))


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


def explain_desired(group: Obj) -> str:
    """Why `group_desired_replicas` says what it says, for the scale Events: the replicas asked for and the
    bound that applied (`replicas 12 above maxReplicas 10`), times the hosts of a multi-host group."""
    if group.get("suspend") is True:
        return "suspended"
    low, high = as_int(group.get("minReplicas"), 0), as_int(group.get("maxReplicas"), INT32_MAX)
    replicas = group.get("replicas")
    if not isinstance(replicas, int):
        why = f"replicas unset, minReplicas {low}"
    elif replicas < low:
        why = f"replicas {replicas} below minReplicas {low}"
    else:
        why = f"replicas {replicas}"
    if max(low, replicas if isinstance(replicas, int) else low) > high:
        why += f" above maxReplicas {high}"
    hosts = as_int(group.get("numOfHosts"), 1)
    return why + (f" x numOfHosts {hosts}" if hosts != 1 else "")
