"""With none of `--node-event-forwarder-sources/-reasons/-types` set (conftest's operator), the node event
forwarder does not run: a Node Event that it would select reaches no RayCluster."""

from __future__ import annotations

import uuid

from support.eventually import eventually

from .conftest import Kube
from .test_lifecycle import set_replicas, small_cluster, wait_ready_with
from .test_node_events import forwarded, node_of, post_node_event


async def test_without_filter_lists_no_node_event_is_forwarded(kube: Kube) -> None:
    await kube.create_cluster(small_cluster("nodeevents-off", replicas=0))
    await wait_ready_with(kube, "nodeevents-off", 0)
    node = await node_of(kube, "nodeevents-off")
    marker = uuid.uuid4().hex
    await post_node_event(kube, node, "NodeNotReady", f"selected {marker}")
    # Something the operator does after the Event was posted: its Event about a new worker pod.
    await set_replicas(kube, "nodeevents-off", 1)

    async def later() -> bool:
        events = await kube.events("nodeevents-off")
        return any(e.get("reason") == "CreatedWorkerPod" for e in events)

    await eventually(later, 60, "the operator's Event about the new worker")
    assert forwarded(await kube.events("nodeevents-off"), marker) == []
