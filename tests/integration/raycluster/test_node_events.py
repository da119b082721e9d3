"""The node event forwarder (upstream v1.8, kuberay#4978) under the real operator, started with
`--node-event-forwarder-reasons=NodeNotReady --node-event-forwarder-sources=kubelet
--node-event-forwarder-types=Warning`: a selected Event about the Node a RayCluster's pods run on is
re-emitted on that RayCluster, once, naming the Node; one of a reason not selected is not. (With no list set
the forwarder does not run: test_node_events_off.py.)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kuberay.runtime.resources import EVENT
from kubesemantics.times import format_time
from support.eventually import eventually
from support.operator_process import OperatorProcess

from .conftest import Kube, service_account_kubeconfig
from .test_lifecycle import small_cluster, wait_ready_with

FORWARDER_FLAGS = (
    "--node-event-forwarder-reasons=NodeNotReady",
    "--node-event-forwarder-sources=kubelet",
    "--node-event-forwarder-types=Warning",
)


@pytest.fixture(scope="module")
def operator(kube_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """As conftest's (deploy/rbac's ServiceAccount, no refusal in the log), with the forwarder's lists."""
    log_dir = os.environ.get("RAYCLUSTER_TEST_LOG_DIR")
    directory = Path(log_dir) if log_dir else tmp_path_factory.mktemp("operator")
    kubeconfig = service_account_kubeconfig(kube_backend, "kuberay-system", directory / "kubeconfig")
    process = OperatorProcess(kubeconfig, directory / "operator.log", *FORWARDER_FLAGS).start()
    try:
        yield process
    finally:
        process.stop()
    assert "forbidden" not in (directory / "operator.log").read_text().lower()


async def node_of(kube: Kube, cluster: str) -> str:
    async def scheduled() -> str:
        pods = await kube.live_pods(cluster)
        nodes = {(p.get("spec") or {}).get("nodeName") for p in pods}
        return str(nodes.pop()) if len(nodes) == 1 and None not in nodes and pods else ""

    node: str = await eventually(scheduled, 60, f"{cluster}'s pods bound to one node")
    return node


async def post_node_event(kube: Kube, node: str, reason: str, message: str) -> dict[str, Any]:
    """A core/v1 Event about `node` in `default`, as a kubelet writes one."""
    now = format_time(datetime.now(UTC))
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{node}.{uuid.uuid4().hex[:12]}", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
        "type": "Warning",
        "reason": reason,
        "message": message,
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    created: dict[str, Any] = await kube.client.create(EVENT, event, "default")
    return created


def forwarded(events: list[dict[str, Any]], marker: str) -> list[dict[str, Any]]:
    return [e for e in events if marker in (e.get("message") or "")]


async def test_a_selected_node_event_is_re_emitted_on_the_raycluster(kube: Kube) -> None:
    await kube.create_cluster(small_cluster("nodeevents", replicas=1))
    await wait_ready_with(kube, "nodeevents", 1)
    node = await node_of(kube, "nodeevents")
    marker = uuid.uuid4().hex
    # Posted first: it would be forwarded before the selected one if its reason were selected.
    await post_node_event(kube, node, "Rebooted", f"not selected {marker}")
    await post_node_event(kube, node, "NodeNotReady", f"selected {marker}")

    async def arrived() -> list[dict[str, Any]]:
        return forwarded(await kube.events("nodeevents"), marker)

    found = await eventually(arrived, 60, "the Node Event forwarded to the RayCluster")
    assert len(found) == 1, found
    event = found[0]
    assert event["type"] == "Warning"
    assert event["reason"] == "NodeNotReady/kubelet"
    assert event["message"] == (
        f'Node event observed on Node "{node}" (reason: NodeNotReady, source: kubelet): selected {marker}'
    )
    assert event["involvedObject"]["kind"] == "RayCluster"
    assert event["involvedObject"]["name"] == "nodeevents"
    assert event["reportingComponent"] == "kuberay-node-event-forwarder"
