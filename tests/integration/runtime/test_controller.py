import asyncio
import collections
import contextlib

import pytest
from prometheus_client import CollectorRegistry

from kuberay.runtime import errors
from kuberay.runtime.clock import SystemClock
from kuberay.runtime.controller import Controller, Result
from kuberay.runtime.events import EventRecorder
from kuberay.runtime.manager import Manager
from kuberay.runtime.metrics import RuntimeMetrics
from kuberay.runtime.ratelimit import RequeueRateLimiter
from kuberay.runtime.resources import CONFIG_MAP, EVENT, SECRET, ObjectKey
from kuberay.runtime.steps import step
from support.eventually import eventually

from .kube import client_for, new_namespace, not_root_ca


@contextlib.asynccontextmanager
async def running(manager: Manager):
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    try:
        await asyncio.wait_for(manager.wait_synced(), 20)
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


def child(namespace: str, name: str, parent: dict) -> dict:
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": parent["metadata"]["name"],
        "uid": parent["metadata"]["uid"],
        "controller": True,
    }
    return {
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
        "stringData": {"k": "v"},
    }


async def test_a_controller_reconciles_each_key_once_per_burst_of_changes(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    gate = asyncio.Event()
    calls: collections.Counter[ObjectKey] = collections.Counter()
    seen_absent: list[ObjectKey] = []

    async def reconcile(key: ObjectKey) -> Result:
        calls[key] += 1
        if calls[key] == 1:
            await gate.wait()
        if manager.cache(CONFIG_MAP).get(key) is None:
            seen_absent.append(key)
        return Result()

    manager = Manager(client, RuntimeMetrics(CollectorRegistry()), namespaces=[namespace])
    manager.add(Controller("toy", reconcile).for_(CONFIG_MAP, not_root_ca).owns(SECRET))
    key = ObjectKey(namespace, "parent")
    async with running(manager):
        parent = await client.create(
            CONFIG_MAP, {"metadata": {"name": "parent", "namespace": namespace}, "data": {"n": "0"}}
        )
        await eventually(lambda: calls[key] == 1)  # the first reconcile is now in flight, held at the gate
        for i in range(3):
            await client.create(SECRET, child(namespace, f"child-{i}", parent))
        for n in range(1, 4):
            await client.patch(CONFIG_MAP, "parent", {"data": {"n": str(n)}}, namespace)
        await client.delete(SECRET, "child-0", namespace)
        secrets = manager.cache(SECRET)
        await eventually(lambda: len(secrets) == 2 and manager.cache(CONFIG_MAP).get(key)["data"]["n"] == "3")
        gate.set()
        await eventually(lambda: calls[key] == 2)
        await eventually(lambda: manager.controllers[0].queue._processing == {})
        await asyncio.sleep(0.2)  # room for a wrong extra reconcile to show up
        assert calls[key] == 2 and len(calls) == 1
        await client.delete(CONFIG_MAP, "parent", namespace)
        await eventually(lambda: key in seen_absent)  # the garbage collector may delete the children too
    await client.close()


async def test_a_conflicting_update_is_retried_and_converges(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    results: list[str] = []

    async def reconcile(key: ObjectKey) -> Result:
        cached = manager.cache(CONFIG_MAP).get(key)
        if cached is None or cached["data"].get("reconciled") == "true":
            return Result()
        mine = dict(cached, data={**cached["data"], "reconciled": "true"})
        if not results:
            # Someone else writes between our read and our write: our resourceVersion is now stale.
            await client.patch(CONFIG_MAP, key.name, {"data": {"other": "writer"}}, key.namespace)
        try:
            await client.update(CONFIG_MAP, mine)
        except errors.ConflictError:
            results.append("conflict")
            raise
        results.append("updated")
        return Result()

    clock = SystemClock()
    manager = Manager(
        client, RuntimeMetrics(registry := CollectorRegistry()), namespaces=[namespace], clock=clock
    )
    limiter = RequeueRateLimiter(clock, base=0.01, cap=1.0)
    manager.add(Controller("toy", reconcile, rate_limiter=limiter).for_(CONFIG_MAP, not_root_ca))
    async with running(manager):
        await client.create(
            CONFIG_MAP, {"metadata": {"name": "cm", "namespace": namespace}, "data": {"mine": "1"}}
        )
        await eventually(lambda: "updated" in results, what=lambda: str(results))
        # A reconcile may still run on a cache that has not seen our own write yet: it conflicts, backs
        # off, then finds the object reconciled. Either way exactly one update lands.
        await eventually(
            lambda: (
                manager.cache(CONFIG_MAP).get(ObjectKey(namespace, "cm"))["data"].get("reconciled") == "true"
            )
        )
    final = await client.get(CONFIG_MAP, "cm", namespace)
    assert final["data"] == {"mine": "1", "other": "writer", "reconciled": "true"}
    assert results[0] == "conflict" and results.count("updated") == 1
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "toy", "result": "error"}
        )
        >= 1
    )
    await client.close()


async def test_client_errors_are_typed(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    with pytest.raises(errors.NotFoundError):
        await client.get(CONFIG_MAP, "nope", namespace)
    await client.create(CONFIG_MAP, {"metadata": {"name": "x", "namespace": namespace}})
    with pytest.raises(errors.AlreadyExistsError) as raised:
        await client.create(CONFIG_MAP, {"metadata": {"name": "x", "namespace": namespace}})
    assert raised.value.__cause__ is not None and raised.value.status == 409
    with pytest.raises(errors.Invalid):
        await client.create(CONFIG_MAP, {"metadata": {"name": "Not_A_Valid_Name", "namespace": namespace}})
    await client.close()


async def test_a_reconcile_timeout_is_recorded_as_an_event_naming_the_step(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    clock = SystemClock()
    recorder = EventRecorder(client, component="toy", instance="test", clock=clock)

    async def reconcile(key: ObjectKey) -> Result:
        with step("hang"):
            await asyncio.Event().wait()  # an answer that never comes
        return Result()

    manager = Manager(client, RuntimeMetrics(CollectorRegistry()), namespaces=[namespace], recorder=recorder)
    manager.add(Controller("toy", reconcile, timeout=0.2).for_(CONFIG_MAP, not_root_ca))
    async with running(manager):
        await client.create(CONFIG_MAP, {"metadata": {"name": "stuck", "namespace": namespace}})

        async def recorded() -> list[dict]:
            await recorder.flush()
            return [
                e for e in (await client.list(EVENT, namespace)).items if e["reason"] == "ReconcileTimeout"
            ]

        (event,) = await eventually(recorded, 30, "a ReconcileTimeout Event")
        assert (event["type"], event["involvedObject"]["name"]) == ("Warning", "stuck")
        assert event["message"] == 'reconcile step "hang" timed out after 0.2s'
    await client.close()
