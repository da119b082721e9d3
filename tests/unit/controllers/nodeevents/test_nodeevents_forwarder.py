"""The node event forwarder's reconcile over caches: one Event per RayCluster on the Node, once per occurrence,
nothing for history or for a Node without Ray pods; and when the operator runs it at all."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from kuberay.api.config import ConfigError, Configuration
from kuberay.api.settings import OperatorSettings
from kuberay.controllers.nodeevents import setup
from kuberay.controllers.nodeevents.reconciler import NODE_NAME_INDEX, NodeEventForwarder, node_name_index
from kuberay.controllers.nodeevents.selection import EventFilter
from kuberay.runtime.cache import Store, prepare
from kuberay.runtime.client import Client
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.manager import Manager
from kuberay.runtime.metrics import RuntimeMetrics
from kuberay.runtime.resources import EVENT, POD, ObjectKey

START = datetime(2026, 1, 1, 12, 0, 0, 500000, tzinfo=UTC)
KEY = ObjectKey("default", "n1.1")


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []

    def record(self, obj: Any, type: str, reason: str, message: str, action: str = "") -> None:
        self.events.append((obj["metadata"]["name"], type, reason, message, action))


def store(*objects: dict[str, Any]) -> Store:
    found = Store()
    for obj in objects:
        found.upsert(prepare(obj))
    return found


def pod(name: str, cluster: str, node: str, namespace: str = "ns") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"ray.io/cluster": cluster}},
        "spec": {"nodeName": node},
    }


def cluster(name: str, namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace},
    }


def node_event(
    count: int = 1, at: str = "2026-01-01T12:00:01Z", reason: str = "NodeNotReady"
) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1.1", "namespace": "default", "uid": "u1"},
        "involvedObject": {"kind": "Node", "name": "n1"},
        "type": "Warning",
        "reason": reason,
        "source": {"component": "kubelet"},
        "message": "not ready",
        "count": count,
        "lastTimestamp": at,
    }


def forwarder(events: Store, event_filter: EventFilter | None = None) -> tuple[NodeEventForwarder, Recorded]:
    pods = store(
        pod("a-head", "a", "n1"), pod("a-worker", "a", "n1"), pod("b-head", "b", "n1"), pod("c", "c", "n2")
    )
    pods.add_index(NODE_NAME_INDEX, node_name_index)
    recorded = Recorded()
    reconciler = NodeEventForwarder(
        events, pods, store(cluster("a"), cluster("b"), cluster("c")), recorded,
        event_filter or EventFilter.of([], ["NodeNotReady"], []), FakeClock(START),
    )  # fmt: skip
    return reconciler, recorded


async def test_one_event_per_raycluster_on_the_node_once_per_occurrence() -> None:
    events = store(node_event())
    reconciler, recorded = forwarder(events)
    await reconciler.reconcile(KEY)
    note = 'Node event observed on Node "n1" (reason: NodeNotReady, source: kubelet): not ready'
    assert recorded.events == [
        ("a", "Warning", "NodeNotReady/kubelet", note, "Forward"),
        ("b", "Warning", "NodeNotReady/kubelet", note, "Forward"),
    ]
    await reconciler.reconcile(KEY)  # a resync or a requeue
    assert len(recorded.events) == 2
    events.upsert(prepare(node_event(count=2, at="2026-01-01T12:00:30Z")))  # the fault again
    await reconciler.reconcile(KEY)
    assert len(recorded.events) == 4


async def test_history_unselected_reasons_and_deleted_clusters_are_not_forwarded() -> None:
    # Last observed before the start (its own second counts as new: Event times have whole seconds).
    reconciler, recorded = forwarder(store(node_event(at="2026-01-01T11:59:59Z")))
    await reconciler.reconcile(KEY)
    assert recorded.events == []
    reconciler, recorded = forwarder(store(node_event(reason="Rebooted")))
    await reconciler.reconcile(KEY)
    assert recorded.events == []
    reconciler, recorded = forwarder(store(node_event(at="2026-01-01T12:00:00Z")))
    reconciler.clusters = store(cluster("b"))
    await reconciler.reconcile(KEY)
    assert [name for name, *_ in recorded.events] == ["b"]


async def test_an_event_that_left_the_cache_is_forgotten() -> None:
    events = store(node_event())
    reconciler, _ = forwarder(events)
    await reconciler.reconcile(KEY)
    assert KEY in reconciler.forwarded
    events.remove(KEY)
    await reconciler.reconcile(KEY)
    assert reconciler.forwarded == {}


def test_an_event_type_other_than_normal_or_warning_is_refused() -> None:
    with pytest.raises(ConfigError, match="must be 'Normal' or 'Warning'"):
        Configuration.parse({"nodeEventForwarderTypes": ["Error"]})


def test_install_field_selects_node_events_and_indexes_pods_by_node() -> None:
    manager = Manager(cast(Client, None), RuntimeMetrics(CollectorRegistry()), clock=FakeClock(START))
    setup.install(manager, OperatorSettings(config=Configuration(node_event_forwarder_types=["Warning"])))
    assert manager.informer(EVENT).field_selector == "involvedObject.kind=Node"
    manager.cache(POD).upsert(prepare(pod("a-head", "a", "n1")))
    assert [p["metadata"]["name"] for p in manager.cache(POD).by_index(NODE_NAME_INDEX, "n1")] == ["a-head"]
    assert [c.name for c in manager.controllers] == ["node-event-forwarder"]


def test_it_runs_only_when_a_filter_list_is_set() -> None:
    def settings(**lists: list[str]) -> OperatorSettings:
        return OperatorSettings(config=Configuration(**lists))

    assert not setup.enabled(settings())
    assert setup.enabled(settings(node_event_forwarder_reasons=["NodeNotReady"]))
    assert setup.enabled(settings(node_event_forwarder_types=["Warning"]))
