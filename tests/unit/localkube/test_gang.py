"""localkube's scheduler with `--schedulers`: pods of schedulers it does not stand in for are left Pending;
Volcano's gangs are bound all together once minMember fit, and their PodGroup's phase says so."""

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from localkube.controllers.runner import Runner
from localkube.controllers.scheduler import Scheduler
from localkube.node.kubelet import NODES_PREFIX, NodeOptions, SimulatedKubelet
from localkube.storage import Store
from support.eventually import eventually

PODS = "/registry/core/pods/default/"
GROUPS = "/registry/scheduling.volcano.sh/podgroups/default/"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store(tmp_path / "db")
    kubelet = SimulatedKubelet(store, NodeOptions(capacity={"cpu": "4", "memory": "8Gi", "pods": "10"}))
    kubelet.register(lambda node: store.create(NODES_PREFIX + node["metadata"]["name"], node))
    runner = Runner(store, [Scheduler(store, ["default-scheduler", "volcano"]), kubelet])
    await runner.start()
    yield store
    await runner.stop()
    store.close()


def pod(name: str, scheduler: str, group: str = "", cpu: str = "2") -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {"metadata": {"name": name, "namespace": "default", "uid": name, "annotations": annotations},
            "spec": {"containers": [container], "schedulerName": scheduler}}  # fmt: skip


def podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member}}  # fmt: skip


async def until(store: Store, key: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    found: dict[str, Any] = await eventually(
        lambda: (obj := store.get(key)) and check(obj) and obj, timeout=10, every=0.02
    )
    return found


def scheduled(p: dict[str, Any]) -> dict[str, Any] | None:
    return next(
        (c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None
    )


async def test_a_pod_for_a_scheduler_that_does_not_run_is_left_pending(store: Store) -> None:
    store.create(PODS + "other", pod("other", "yunikorn"))
    store.create(PODS + "mine", pod("mine", "default-scheduler"))
    await until(store, PODS + "mine", lambda p: bool(p["spec"].get("nodeName")))
    other = store.get(PODS + "other")
    assert other is not None and not other["spec"].get("nodeName") and scheduled(other) is None


async def test_a_gang_binds_all_together_or_none(store: Store) -> None:
    store.create(GROUPS + "g", podgroup("g", 3))
    for name in ("a", "b", "c"):  # 3 × 2 CPUs on a 4-CPU node
        store.create(PODS + name, pod(name, "volcano", "g"))
    for name in ("a", "b", "c"):
        waiting = await until(store, PODS + name, lambda p: scheduled(p) is not None)
        condition = scheduled(waiting)
        assert condition is not None and (condition["status"], condition["reason"]) == (
            "False",
            "Unschedulable",
        )
        assert condition["message"] == "pod group default/g is not ready: 2 of its pods fit, minMember is 3"
        assert not waiting["spec"].get("nodeName")
    await until(store, GROUPS + "g", lambda g: (g.get("status") or {}).get("phase") == "Pending")
    # A smaller gang fits: both of the two pods left are bound, and the group runs.
    store.delete(PODS + "c")
    group = store.get(GROUPS + "g")
    assert group is not None
    group["spec"]["minMember"] = 2
    store.update(GROUPS + "g", group, int(group["metadata"]["resourceVersion"]))
    for name in ("a", "b"):
        await until(store, PODS + name, lambda p: bool(p["spec"].get("nodeName")))
    await until(store, GROUPS + "g", lambda g: (g.get("status") or {}).get("phase") == "Running")


async def test_a_gang_waits_for_its_podgroup(store: Store) -> None:
    store.create(PODS + "early", pod("early", "volcano", "later", cpu="1"))
    waiting = await until(store, PODS + "early", lambda p: scheduled(p) is not None)
    assert scheduled(waiting)["message"] == "pod group default/later not found"  # type: ignore[index]
    store.create(GROUPS + "later", podgroup("later", 1))
    await until(store, PODS + "early", lambda p: bool(p["spec"].get("nodeName")))
