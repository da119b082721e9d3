"""The node event forwarder's pure parts: which Node Events are selected, the RayClusters on a Node, the
forwarded reason and note, and which occurrence is new (upstream's kuberay#4978)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kuberay.controllers.nodeevents.selection import (
    EventFilter,
    Forwarded,
    clusters_on_node,
    forwarded_note,
    forwarded_reason,
    last_observed,
    occurrence_count,
)


def node_event(**fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "metadata": {"name": "n1.1", "namespace": "default", "uid": "u1"},
        "involvedObject": {"kind": "Node", "name": "n1"},
        "type": "Warning",
        "reason": "NodeNotReady",
        "source": {"component": "kubelet"},
        "message": "Node n1 status is now: NodeNotReady",
    }
    event.update(fields)
    return event


def test_empty_lists_select_every_node_event_and_nothing_else() -> None:
    everything = EventFilter()
    assert not everything.configured
    assert everything.matches(node_event())
    assert everything.matches(node_event(type="Normal", reason="Rebooted"))
    assert not everything.matches(node_event(involvedObject={"kind": "Pod", "name": "p"}))


@pytest.mark.parametrize(
    ("fields", "selected"),
    [
        ({}, True),
        ({"reason": "Rebooted"}, False),
        ({"type": "Normal"}, False),
        ({"source": {"component": "node-problem-detector"}}, False),
        # An events.k8s.io Event names its emitter in reportingController (core/v1's reportingComponent).
        ({"source": {}, "reportingComponent": "kubelet"}, True),
    ],
)
def test_each_non_empty_list_must_hold_the_value(fields: dict[str, Any], selected: bool) -> None:
    chosen = EventFilter.of(["kubelet"], ["NodeNotReady"], ["Warning"])
    assert chosen.configured
    assert chosen.matches(node_event(**fields)) is selected


def test_the_forwarded_reason_and_note_name_the_source_and_the_node() -> None:
    event = node_event()
    assert forwarded_reason(event) == "NodeNotReady/kubelet"
    assert forwarded_note("n1", event) == (
        'Node event observed on Node "n1" (reason: NodeNotReady, source: kubelet): '
        "Node n1 status is now: NodeNotReady"
    )
    assert forwarded_reason(node_event(reason="", source={})) == "NodeEvent"


def test_long_reasons_and_notes_are_cut_to_the_api_limits() -> None:
    event = node_event(reason="R" * 200, message="é" * 1000)
    assert len(forwarded_reason(event).encode()) == 128
    note = forwarded_note("n1", event)
    assert len(note.encode()) <= 1024 and note.endswith("...")


def test_clusters_on_a_node_are_counted_once_each() -> None:
    def pod(namespace: str, cluster: str | None) -> dict[str, Any]:
        labels = {"ray.io/cluster": cluster} if cluster else {}
        return {"metadata": {"namespace": namespace, "labels": labels}}

    pods = [pod("a", "c1"), pod("a", "c1"), pod("b", "c1"), pod("a", None)]
    assert clusters_on_node(pods) == [("a", "c1"), ("b", "c1")]


def test_occurrences_count_from_series_or_count() -> None:
    assert occurrence_count(node_event()) == 1
    assert occurrence_count(node_event(count=3)) == 3
    assert occurrence_count(node_event(count=3, series={"count": 5})) == 5


def test_last_observed_is_the_latest_time_given() -> None:
    event = node_event(
        firstTimestamp="2026-01-01T00:00:00Z",
        lastTimestamp="2026-01-01T00:05:00Z",
        eventTime="2026-01-01T00:03:00.000000Z",
    )
    assert last_observed(event) == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    assert last_observed(node_event(firstTimestamp="2026-01-01T00:00:00Z")) == datetime(
        2026, 1, 1, tzinfo=UTC
    )
    assert last_observed(node_event()) is None


def test_a_count_bump_or_a_new_uid_is_a_new_occurrence() -> None:
    record = Forwarded.of(node_event(count=2))
    assert record.supersedes(node_event(count=2))
    assert not record.supersedes(node_event(count=3))
    assert not record.supersedes(node_event(count=1, metadata={"name": "n1.1", "uid": "u2"}))
