"""The pure decisions behind two conditions beyond upstream: `Valid` (kuberay#4975) and
`OrphanedWorkerGroup` (kuberay#5143), with the drain this operator adds to the latter."""

from __future__ import annotations

from typing import Any

from kuberay.controllers.raycluster import orphans, validity
from kubesemantics.conditions import find_condition

T0, T1 = "2026-01-02T03:04:05Z", "2026-01-02T03:05:00Z"
HEAD_READY = {"type": "HeadPodReady", "status": "True", "reason": "HeadPodRunningAndReady", "message": ""}


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or ()}


# --- Valid --------------------------------------------------------------------------------------------------


def test_a_refused_generation_is_observed_with_the_refusal_and_nothing_else_changes() -> None:
    old = {"state": "ready", "observedGeneration": 1, "readyWorkerReplicas": 2, "conditions": [HEAD_READY]}
    new = validity.invalid_status(
        old, 2, "The RayCluster spec is invalid ns/c: bad", conditions_enabled=True, stamp=T1
    )
    assert new["observedGeneration"] == 2
    assert {
        k: v for k, v in new.items() if k not in ("observedGeneration", "conditions", "lastUpdateTime")
    } == {
        "state": "ready",
        "readyWorkerReplicas": 2,
    }
    found = conditions(new)
    assert found["HeadPodReady"] == HEAD_READY
    assert found["Valid"] == {
        "type": "Valid",
        "status": "False",
        "reason": "ValidationFailed",
        "message": "The RayCluster spec is invalid ns/c: bad",
        "lastTransitionTime": T1,
    }
    assert old["conditions"] == [HEAD_READY] and old["observedGeneration"] == 1  # the input is not mutated
    assert validity.invalid_status_changed(old, new)


def test_a_second_pass_over_the_same_refusal_writes_nothing() -> None:
    first = validity.invalid_status({}, 3, "refused", conditions_enabled=True, stamp=T0)
    again = validity.invalid_status(first, 3, "refused", conditions_enabled=True, stamp=T1)
    assert not validity.invalid_status_changed(first, again)  # lastUpdateTime alone is no reason to write
    assert conditions(again)["Valid"]["lastTransitionTime"] == T0


def test_with_the_conditions_gate_off_only_the_generation_is_observed() -> None:
    new = validity.invalid_status({"state": "ready"}, 4, "refused", conditions_enabled=False, stamp=T1)
    assert "conditions" not in new
    assert new["observedGeneration"] == 4
    assert validity.invalid_status_changed({"state": "ready"}, new)


def test_a_fixed_spec_turns_valid_true_and_keeps_the_other_conditions() -> None:
    refused = validity.invalid_status(
        {"conditions": [HEAD_READY]}, 2, "refused", conditions_enabled=True, stamp=T0
    )
    validity.mark_valid(refused, T1)
    found = conditions(refused)
    assert found["HeadPodReady"] == HEAD_READY
    assert (found["Valid"]["status"], found["Valid"]["reason"]) == ("True", "RayClusterSpecValid")
    assert found["Valid"]["message"] == "RayCluster metadata and spec are valid"
    assert found["Valid"]["lastTransitionTime"] == T1


# --- OrphanedWorkerGroup ----------------------------------------------------------------------------------


def pod(name: str, group: str | None, node_type: str = "worker", terminating: bool = False) -> dict[str, Any]:
    labels = {"ray.io/cluster": "c", "ray.io/node-type": node_type}
    if group is not None:
        labels["ray.io/group"] = group
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if terminating:
        metadata["deletionTimestamp"] = T0
    return {"metadata": metadata}


def test_pods_of_a_group_the_spec_no_longer_names_are_orphaned() -> None:
    pods = [
        pod("c-head", "headgroup", node_type="head"),
        pod("c-small-a", "small"),
        pod("c-gone-b", "gone"),
        pod("c-gone-a", "gone", terminating=True),
        pod("c-old-x", "old"),
        pod("c-nolabel", None),  # no group label: nothing says whose it is
    ]
    found = orphans.find(["small"], pods)
    assert found == [
        orphans.OrphanedGroup("gone", ("c-gone-a", "c-gone-b"), ("c-gone-b",)),
        orphans.OrphanedGroup("old", ("c-old-x",), ("c-old-x",)),
    ]
    assert orphans.find(["small", "gone", "old"], pods) == []


def test_the_condition_names_each_group_and_its_pod_count_and_clears_when_none_remain() -> None:
    status: dict[str, Any] = {"conditions": [HEAD_READY]}
    groups = orphans.find(
        ["small"], [pod("c-gone-a", "gone"), pod("c-gone-b", "gone"), pod("c-old-x", "old")]
    )
    orphans.set_orphan_condition(status, groups, T0)
    condition = find_condition(status["conditions"], "OrphanedWorkerGroup")
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "OrphanedWorkerGroupPodsFound")
    assert condition["message"] == (
        "Worker groups removed from spec.workerGroupSpecs still have Pods: gone (2 Pods), old (1 Pod); deleting them"
    )
    # Draining: the pods are terminating but still there, so the condition stays.
    draining = orphans.find(["small"], [pod("c-gone-a", "gone", terminating=True)])
    assert draining[0].to_delete == ()
    orphans.set_orphan_condition(status, draining, T1)
    assert find_condition(status["conditions"], "OrphanedWorkerGroup") is not None
    orphans.set_orphan_condition(status, orphans.find(["small"], []), T1)
    assert status["conditions"] == [HEAD_READY]


def test_the_event_names_the_group_its_pod_count_and_its_pods() -> None:
    (group,) = orphans.find([], [pod("c-gone-b", "gone"), pod("c-gone-a", "gone")])
    assert orphans.event_message(group, "ns", "c") == (
        "Worker group gone of RayCluster ns/c is no longer in spec.workerGroupSpecs "
        "but has 2 Pod(s) [c-gone-a c-gone-b]; deleting them"
    )
