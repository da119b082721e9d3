"""The pure parts of `localkube agent`: its Lease, the renewal of its Node's conditions, and the mapping of
store keys to API paths."""

from __future__ import annotations

import datetime

from localkube.node.heartbeat import lease_object, renewed_conditions
from localkube.node.kubelet import NodeOptions, node_object
from localkube.node.remote import api_path, object_key

EARLIER = datetime.datetime(2026, 1, 1, 10, 0, 0, tzinfo=datetime.UTC)
LATER = EARLIER + datetime.timedelta(minutes=5)


def test_the_lease_is_held_by_its_node_and_goes_with_it() -> None:
    node = {"metadata": {"name": "n1", "uid": "u-1"}}
    lease = lease_object(node, LATER, 40)
    assert lease["metadata"]["namespace"] == "kube-node-lease" and lease["metadata"]["name"] == "n1"
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u-1"}
    ]
    assert lease["spec"] == {
        "holderIdentity": "n1",
        "leaseDurationSeconds": 40,
        "renewTime": "2026-01-01T10:05:00.000000Z",
    }


def test_a_heartbeat_keeps_transition_times_of_unchanged_conditions_only() -> None:
    current = node_object(NodeOptions(name="n1"), EARLIER)["status"]["conditions"]
    current = [{**c, "status": "Unknown"} if c["type"] == "Ready" else c for c in current]
    fresh = node_object(NodeOptions(name="n1"), LATER)["status"]["conditions"]
    renewed = {c["type"]: c for c in renewed_conditions(current, fresh)}
    assert renewed["Ready"]["status"] == "True"
    assert renewed["Ready"]["lastTransitionTime"] == "2026-01-01T10:05:00Z"
    assert renewed["MemoryPressure"]["lastTransitionTime"] == "2026-01-01T10:00:00Z"
    assert {c["lastHeartbeatTime"] for c in renewed.values()} == {"2026-01-01T10:05:00Z"}


def test_store_keys_map_to_core_api_paths() -> None:
    key = object_key("pods", {"metadata": {"name": "p", "namespace": "ns"}})
    assert key == "/registry/core/pods/ns/p"
    assert api_path(key) == "/api/v1/namespaces/ns/pods/p"
