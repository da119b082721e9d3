from typing import Any

from kubesemantics import conditions


def test_set_moves_the_transition_time_only_with_the_status() -> None:
    listed: list[dict[str, Any]] = []
    conditions.set_condition(listed, "Ready", "False", "Starting", "", "t1")
    conditions.set_condition(listed, "Ready", "False", "StillStarting", "wait", "t2")
    assert listed == [
        {
            "type": "Ready",
            "status": "False",
            "lastTransitionTime": "t1",
            "reason": "StillStarting",
            "message": "wait",
        }
    ]
    conditions.set_condition(listed, "Ready", "True", "Up", "", "t3")
    conditions.set_condition(listed, "Synced", "True", "Done", "", "t3")
    assert [(c["type"], c["lastTransitionTime"]) for c in listed] == [("Ready", "t3"), ("Synced", "t3")]
    assert conditions.is_condition_true({"conditions": listed}, "Ready")
    conditions.remove_condition(listed, "Ready")
    assert conditions.find_condition(listed, "Ready") is None
    assert not conditions.is_condition_true({"conditions": listed}, "Ready")


def test_transition_time_keeps_the_previous_one_while_the_status_holds() -> None:
    previous = {"type": "PodScheduled", "status": "False", "lastTransitionTime": "t1"}
    assert conditions.transition_time(previous, "False", "t2") == "t1"
    assert conditions.transition_time(previous, "True", "t2") == "t2"
    assert conditions.transition_time(None, "True", "t2") == "t2"
