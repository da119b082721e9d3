"""Beyond upstream, from its open proposals (kuberay#1739, PR #5143): worker groups removed from
`spec.workerGroupSpecs` while their pods remain.

Upstream's pod pass visits only the groups the spec still names, so such pods are never scaled, healed
or deleted, and the head's autoscaler can stall on nodes no group accounts for. PR #5143 surfaces them:
the `OrphanedWorkerGroup` condition (True, reason `OrphanedWorkerGroupPodsFound`, naming the groups and
their pod counts) and one Warning Event `OrphanedWorkerGroupPodsDetected` per group going orphaned. This
operator goes one step further and drains them: the pods pass deletes them through the ordinary worker
deletion (graceful, with scale expectations and Events), and the condition is removed once none is left.

Facts in, a decision out: `find` reads the spec's group names and the cluster's pods; the pods pass
(`pods.PodReconciler`) and the status write act on its answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kuberay.api import constants
from kuberay.controllers.raycluster import podstate
from kubesemantics.conditions import remove_condition, set_condition

JSON = dict[str, Any]
Obj = Mapping[str, Any]

CONDITION = "OrphanedWorkerGroup"
REASON = "OrphanedWorkerGroupPodsFound"
EVENT_REASON = "OrphanedWorkerGroupPodsDetected"
# Ends the group's `ScaledWorkerGroup` Event: why the pods went.
WHY = "the group is no longer in spec.workerGroupSpecs"


@dataclass(frozen=True)
class OrphanedGroup:
    """A group label no worker group of the spec carries, and the pods that still carry it."""

    name: str
    pods: tuple[str, ...]  # every one still there, terminating or not
    to_delete: tuple[str, ...]  # those not yet terminating: what a drain still has to delete

    def describe(self) -> str:
        return f"{self.name} ({len(self.pods)} Pod{'s' if len(self.pods) != 1 else ''})"


def find(group_names: Iterable[str], pods: Iterable[Obj]) -> list[OrphanedGroup]:
    """The orphaned groups among the worker pods of one cluster, by name. A worker pod without a group
    label is not counted: nothing says which group made it, so nothing here claims it."""
    known = set(group_names)
    by_group: dict[str, list[Obj]] = {}
    for pod in podstate.worker_pods(pods):
        group = podstate.pod_labels(pod).get(constants.RAY_NODE_GROUP_LABEL, "")
        if group and group not in known:
            by_group.setdefault(group, []).append(pod)
    return [
        OrphanedGroup(
            name,
            tuple(sorted(podstate.pod_name(p) for p in found)),
            tuple(sorted(podstate.pod_name(p) for p in found if not p["metadata"].get("deletionTimestamp"))),
        )
        for name, found in sorted(by_group.items())
    ]


def condition_message(groups: Sequence[OrphanedGroup]) -> str:
    listed = ", ".join(g.describe() for g in groups)
    return f"Worker groups removed from spec.workerGroupSpecs still have Pods: {listed}; deleting them"


def event_message(group: OrphanedGroup, namespace: str, cluster: str) -> str:
    return (
        f"Worker group {group.name} of RayCluster {namespace}/{cluster} is no longer in "
        f"spec.workerGroupSpecs but has {len(group.pods)} Pod(s) [{' '.join(group.pods)}]; deleting them"
    )


def set_orphan_condition(status: JSON, groups: Sequence[OrphanedGroup], stamp: str) -> None:
    """True while any orphaned pod remains (terminating ones too: they still hold their node), removed
    once none does (in place)."""
    conditions: list[JSON] = status.setdefault("conditions", [])
    if groups:
        set_condition(conditions, CONDITION, "True", REASON, condition_message(groups), stamp)
    else:
        remove_condition(conditions, CONDITION)
