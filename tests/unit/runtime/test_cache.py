import copy

import orjson
import pytest

from kuberay.runtime.cache import OWNER_UID_INDEX, Store, prepare
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.expectations import ScaleAction, ScaleExpectations
from kuberay.runtime.frozen import ReadOnlyError
from kuberay.runtime.resources import ObjectKey


def pod(name: str, namespace: str = "ns", owner: str = "", rv: str = "1", **labels: str) -> dict:
    metadata = {
        "name": name,
        "namespace": namespace,
        "resourceVersion": rv,
        "labels": labels,
        "managedFields": [{"manager": "x"}],
    }
    if owner:
        metadata["ownerReferences"] = [
            {"uid": owner, "name": owner, "kind": "RayCluster", "apiVersion": "ray.io/v1", "controller": True}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": [{"name": "c"}]}}


def test_cached_objects_lose_managed_fields_and_refuse_changes_until_copied():
    obj = prepare(pod("a"))
    assert "managedFields" not in obj["metadata"]
    with pytest.raises(ReadOnlyError):
        obj["metadata"]["labels"]["x"] = "y"
    with pytest.raises(ReadOnlyError):
        obj["spec"]["containers"].append({})
    mutable = copy.deepcopy(obj)
    mutable["spec"]["containers"].append({"name": "d"})
    assert len(obj["spec"]["containers"]) == 1
    assert orjson.loads(orjson.dumps(obj)) == obj


def test_two_decoded_pods_share_their_equal_strings_once_cached():
    # Each decode makes new string objects, as each watch event's does; only interning shares them.
    image = "rayproject/ray:2.52.0-py311"
    script = "x" * 300
    first, second = (
        prepare(orjson.loads(orjson.dumps({"spec": {"containers": [{"image": image, "args": [script]}]}})))
        for _ in range(2)
    )
    a, b = first["spec"]["containers"][0], second["spec"]["containers"][0]
    assert a["image"] == image and a["image"] is b["image"]
    # Long strings (scripts, serve configs) are kept as decoded: rarely repeated, they'd only grow the table.
    assert a["args"][0] == script and a["args"][0] is not b["args"][0]


def test_values_new_with_every_write_are_not_interned():
    # Shared by nothing, each would only be one more insertion into (and churn of) CPython's intern table.
    raw = orjson.dumps(
        {
            "metadata": {"resourceVersion": "48213", "labels": {"ray.io/cluster": "raycluster-a"}},
            "status": {
                "podIP": "10.244.0.17",
                "podIPs": [{"ip": "10.244.0.17"}],
                "containerStatuses": [
                    {"containerID": "localkube://0f3a9c", "image": "rayproject/ray:2.52.0"}
                ],
            },
        }
    )
    first, second = prepare(orjson.loads(raw)), prepare(orjson.loads(raw))
    assert first == second
    assert first["metadata"]["labels"]["ray.io/cluster"] is second["metadata"]["labels"]["ray.io/cluster"]
    a, b = first["status"]["containerStatuses"][0], second["status"]["containerStatuses"][0]
    assert a["image"] is b["image"]
    assert a["containerID"] is not b["containerID"]
    assert first["metadata"]["resourceVersion"] is not second["metadata"]["resourceVersion"]
    assert first["status"]["podIP"] is not second["status"]["podIP"]
    assert first["status"]["podIPs"][0]["ip"] is not second["status"]["podIPs"][0]["ip"]


def test_indexes_follow_updates_and_removals():
    store = Store()
    store.add_index("group", lambda o: [o["metadata"]["labels"].get("group", "")])
    store.upsert(prepare(pod("a", owner="u1", group="g1")))
    store.upsert(prepare(pod("b", owner="u1", group="g2")))
    store.upsert(prepare(pod("c", namespace="other", owner="u2")))
    assert {o["metadata"]["name"] for o in store.by_index(OWNER_UID_INDEX, "u1")} == {"a", "b"}
    store.upsert(prepare(pod("b", owner="u2", group="g1", rv="2")))
    assert [o["metadata"]["name"] for o in store.by_index(OWNER_UID_INDEX, "u1")] == ["a"]
    assert {o["metadata"]["name"] for o in store.by_index("group", "g1")} == {"a", "b"}
    store.remove(ObjectKey("ns", "a"))
    assert [o["metadata"]["name"] for o in store.list("ns")] == ["b"]
    assert [o["metadata"]["name"] for o in store.list(labels={"group": "g1"})] == ["b"]
    with pytest.raises(KeyError, match="no index named 'nope'"):
        store.by_index("nope", "x")


def names(objects: list) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


def test_a_label_index_serves_selector_lists_and_follows_relabelling():
    store = Store()
    store.upsert(prepare(pod("a", cluster="c1", group="g")))
    store.index_label("cluster")
    store.index_label("cluster")  # idempotent: controllers sharing the cache each ask
    store.upsert(prepare(pod("b", cluster="c1")))
    store.upsert(prepare(pod("c", cluster="c2", group="g")))
    store.upsert(prepare(pod("d", namespace="other", cluster="c1")))
    assert names(store.list("ns", {"cluster": "c1"})) == ["a", "b"]
    assert names(store.list("ns", {"group": "g", "cluster": "c1"})) == ["a"]
    store.upsert(prepare(pod("b", cluster="c2", rv="2")))
    assert names(store.list("ns", {"cluster": "c1"})) == ["a"]
    assert names(store.list("ns", {"cluster": "c2"})) == ["b", "c"]


def test_scale_expectations_wait_for_the_cache_or_the_timeout():
    store, clock = Store(), FakeClock()
    owner = ObjectKey("ns", "cluster")
    expectations = ScaleExpectations(store.get, clock, connected_since=lambda: 0.0, timeout=30)
    expectations.expect(owner, "g", "p1", ScaleAction.CREATE)
    expectations.expect(owner, "g", "p2", ScaleAction.CREATE)
    assert expectations.satisfied(owner, "other-group")
    assert not expectations.satisfied(owner, "g")
    store.upsert(prepare(pod("p1")))
    assert not expectations.satisfied(owner, "g")
    clock.advance(30)  # p2's create never showed up: stop waiting for it
    assert expectations.satisfied(owner, "g")
    expectations.expect(owner, "g", "p1", ScaleAction.DELETE)
    assert not expectations.satisfied(owner, "g")
    store.remove(ObjectKey("ns", "p1"))
    assert expectations.satisfied(owner, "g")


def test_a_create_is_waited_for_while_the_cache_is_cut_off_and_for_the_timeout_after_it_reconnects():
    store, clock = Store(), FakeClock()
    owner = ObjectKey("ns", "cluster")
    connected: list[float | None] = [clock.monotonic()]
    expectations = ScaleExpectations(store.get, clock, connected_since=lambda: connected[0], timeout=30)
    expectations.expect(owner, "g", "p1", ScaleAction.CREATE)
    clock.advance(10)
    connected[0] = None  # the watch broke: the pod may exist without the cache knowing
    clock.advance(60)
    assert not expectations.satisfied(owner, "g")
    connected[0] = clock.monotonic()  # back: a relist or the resumed watch will bring it if it is there
    clock.advance(29)
    assert not expectations.satisfied(owner, "g")
    clock.advance(1)
    assert expectations.satisfied(owner, "g")
    # A delete waits for the cache whatever the connection: the pod is gone only once the cache says so.
    store.upsert(prepare(pod("p2")))
    expectations.expect(owner, "g", "p2", ScaleAction.DELETE)
    connected[0] = None
    assert not expectations.satisfied(owner, "g")
    store.remove(ObjectKey("ns", "p2"))
    assert expectations.satisfied(owner, "g")


def test_scale_expectations_of_one_owner_and_group_leave_the_others_alone():
    store, clock = Store(), FakeClock()
    first, second = ObjectKey("ns", "first"), ObjectKey("ns", "second")
    expectations = ScaleExpectations(store.get, clock, connected_since=lambda: 0.0, timeout=30)
    expectations.expect(first, "g", "p1", ScaleAction.CREATE)
    expectations.expect(second, "g", "p2", ScaleAction.CREATE)
    expectations.expect(first, "h", "p3", ScaleAction.CREATE)
    assert not expectations.satisfied(first, "g")
    assert not expectations.satisfied(second, "g")
    # A newer record for a pod replaces the old one, wherever that was.
    expectations.expect(second, "g", "p1", ScaleAction.DELETE)
    assert expectations.satisfied(first, "g")
    assert expectations.satisfied(second, "g") is False  # p2 is still to be created
    expectations.forget(second)
    assert expectations.satisfied(second, "g")
    assert not expectations.satisfied(first, "h")
    expectations.forget(first, "h")
    assert expectations.satisfied(first, "h")
    assert expectations._records == {} and expectations._place == {}
