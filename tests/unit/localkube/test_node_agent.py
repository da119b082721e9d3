import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from localkube.controllers.runner import Runner
from localkube.controllers.scheduler import Scheduler
from localkube.node.kubelet import NODES_PREFIX, NodeOptions, SimulatedKubelet
from localkube.storage import Store
from support.eventually import eventually
from support.hostaddress import host_address

POD_KEY = "/registry/core/pods/default/"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store(tmp_path / "db")
    kubelet = SimulatedKubelet(store, NodeOptions(capacity={"cpu": "4", "memory": "8Gi", "pods": "10"}))
    kubelet.register(lambda node: store.create(NODES_PREFIX + node["metadata"]["name"], node))
    runner = Runner(store, [Scheduler(store), kubelet])
    await runner.start()
    yield store
    await runner.stop()
    store.close()


def _pod(name: str, cpu: str = "1", **metadata: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name, **metadata},
        "spec": {"containers": [container]},
    }


async def _until(
    store: Store, key: str, check: Callable[[dict[str, Any] | None], bool]
) -> dict[str, Any] | None:
    # A one-item list, so that an object gone (None) that satisfies the check is a result too.
    found: list[dict[str, Any] | None] = await eventually(
        lambda: [obj] if check(obj := store.get(key)) else None, timeout=10, every=0.02
    )
    return found[0]


def _condition(pod: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    assert pod is not None
    return next(c for c in pod["status"]["conditions"] if c["type"] == kind)


async def test_a_pod_is_bound_started_and_ready(store: Store) -> None:
    store.create(POD_KEY + "a", _pod("a"))
    pod = await _until(
        store, POD_KEY + "a", lambda p: bool(p and p.get("status", {}).get("phase") == "Running")
    )
    assert pod is not None and pod["spec"]["nodeName"] == "localkube"
    assert _condition(pod, "Ready")["status"] == "True"
    assert _condition(pod, "PodScheduled")["status"] == "True"
    assert pod["status"]["podIP"].startswith("127.244.")


async def test_a_pod_that_fits_nowhere_says_why_and_schedules_when_room_is_freed(store: Store) -> None:
    store.create(POD_KEY + "big", _pod("big", cpu="3"))
    await _until(store, POD_KEY + "big", lambda p: bool(p and p["spec"].get("nodeName")))
    store.create(POD_KEY + "late", _pod("late", cpu="2"))
    pending = await _until(
        store, POD_KEY + "late", lambda p: bool(p and p.get("status", {}).get("conditions"))
    )
    scheduled = _condition(pending, "PodScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    store.delete(POD_KEY + "big")
    await _until(store, POD_KEY + "late", lambda p: bool(p and p["spec"].get("nodeName") == "localkube"))


async def test_deleting_a_bound_pod_completes_once_finalizers_are_gone(store: Store) -> None:
    created = store.create(POD_KEY + "d", _pod("d", finalizers=["example.com/hold"]))
    bound = await _until(
        store, POD_KEY + "d", lambda p: bool(p and p.get("status", {}).get("phase") == "Running")
    )
    assert bound is not None and created
    bound["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    terminating = store.update(POD_KEY + "d", bound)
    await asyncio.sleep(0.1)
    assert store.get(POD_KEY + "d") is not None
    terminating["metadata"]["finalizers"] = []
    store.update(POD_KEY + "d", terminating)
    await _until(store, POD_KEY + "d", lambda p: p is None)


async def test_injected_failures_show_in_status(store: Store) -> None:
    store.create(POD_KEY + "pull", _pod("pull", annotations={"localkube.io/simulate": "ImagePullBackOff"}))
    pod = await _until(
        store, POD_KEY + "pull", lambda p: bool(p and p.get("status", {}).get("containerStatuses"))
    )
    assert pod is not None and pod["status"]["phase"] == "Pending"
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImagePull"


async def test_a_loopback_address_can_be_pinned_by_annotation(store: Store) -> None:
    store.create(POD_KEY + "pinned", _pod("pinned", annotations={"localkube.io/pod-ip": "127.0.0.1"}))
    pod = await _until(store, POD_KEY + "pinned", lambda p: bool(p and p.get("status", {}).get("podIP")))
    assert pod is not None and pod["status"]["podIP"] == "127.0.0.1"


async def test_an_address_of_this_machine_can_be_pinned_and_a_foreign_one_cannot(store: Store) -> None:
    # The real API server's proxies and EndpointSlices refuse loopback: a pod there is pinned to another of
    # this machine's addresses (tests/e2e/kueue). One no socket here can bind would point it off the machine.
    own = host_address()
    store.create(POD_KEY + "own", _pod("own", annotations={"localkube.io/pod-ip": own}))
    store.create(POD_KEY + "foreign", _pod("foreign", annotations={"localkube.io/pod-ip": "203.0.113.7"}))
    for name, want in (("own", own), ("foreign", None)):
        pod = await _until(store, POD_KEY + name, lambda p: bool(p and p.get("status", {}).get("podIP")))
        assert pod is not None
        assert (pod["status"]["podIP"] == want) if want else pod["status"]["podIP"].startswith("127.244.")


async def test_pods_keep_their_addresses_across_a_restart_and_new_pods_get_others(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")

    async def start_node_then_create(*names: str) -> dict[str, str]:
        kubelet = SimulatedKubelet(store, NodeOptions())
        kubelet.register(lambda node: store.create(NODES_PREFIX + node["metadata"]["name"], node))
        runner = Runner(store, [Scheduler(store), kubelet])
        await runner.start()
        try:
            for name in names:
                store.create(POD_KEY + name, _pod(name, cpu="10m"))
            pods = [
                await _until(store, POD_KEY + n, lambda p: bool(p and p.get("status", {}).get("podIP")))
                for n in names
            ]
            return {name: pod["status"]["podIP"] for name, pod in zip(names, pods, strict=True) if pod}
        finally:
            await runner.stop()

    try:
        before = await start_node_then_create("a", "b", "c")
        store.delete(POD_KEY + "b")
        after = await start_node_then_create("d", "e")
        kept = {n: store.get(POD_KEY + n)["status"]["podIP"] for n in ("a", "c")}  # type: ignore[index]
        assert kept == {"a": before["a"], "c": before["c"]}
        assert len({*kept.values(), *after.values()}) == 4
    finally:
        store.close()
