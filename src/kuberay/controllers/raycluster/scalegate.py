"""Upstream v1.8's `scaleStrategy.scaleGate` (kuberay#5094): while a worker group's gate list is non-empty,
another controller holds the group (Kueue adds `kueue.k8s.io/quota-exceeded` when its quota is exhausted,
so that Ray's autoscaler falls back to another group), and the operator creates none of its pods.

Only creation waits: scale-down, dead-pod cleanup and `workersToDelete` go on, since freeing pods never
needs quota. The gate is the other controllers' to write; the operator never writes the spec, so it keeps
whatever they put there.
"""

from __future__ import annotations

import logging

from kuberay.api.raycluster import RayCluster, WorkerGroupSpec

log = logging.getLogger(__name__)


def gates(group: WorkerGroupSpec) -> list[str]:
    """The names of the group's scale gates (empty: not gated)."""
    strategy = group.scale_strategy
    return [gate.name for gate in (strategy.scale_gate if strategy else None) or ()]


def holds_creation(cluster: RayCluster, group: WorkerGroupSpec, missing: int, why: str) -> bool:
    """Whether the `missing` pods of `group` must wait for its gates to go (a log line says so)."""
    names = gates(group)
    if missing <= 0 or not names:
        return False
    log.info(
        "RayCluster %s/%s: worker group %s is gated by scaleGate %s; not creating %d Pod(s) (%s)",
        cluster.namespace,
        cluster.name,
        group.group_name,
        names,
        missing,
        why,
    )
    return True
