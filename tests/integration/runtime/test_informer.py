import asyncio
import contextlib
import time

import pytest
import yaml

from kuberay.runtime import errors
from kuberay.runtime.client import Client, load_config
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.informer import Event, EventType, Informer
from kuberay.runtime.resources import CONFIG_MAP
from support.cable import Cable
from support.eventually import eventually

from .kube import NOT_ROOT_CA, client_for, new_namespace


def cm(namespace: str, name: str, value: str = "0") -> dict:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"v": value}}


@contextlib.asynccontextmanager
async def informing(client: Client, namespace: str):
    informer = Informer(
        client, CONFIG_MAP, namespaces=[namespace], field_selector=NOT_ROOT_CA, retry_delays=(0.05, 0.3)
    )
    events: list[tuple[EventType, str, str]] = []
    informer.add_handler(
        lambda e: events.append((e.type, e.obj["metadata"]["name"], e.obj.get("data", {}).get("v", "")))
    )
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 20)
    try:
        yield informer, events
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.parametrize("crash", [False, True], ids=["stop", "kill-9"])
async def test_the_watch_resumes_across_a_localkube_restart(localkube_factory, crash):
    server = localkube_factory()
    client = client_for(server)
    namespace = await new_namespace(client)
    await client.create(CONFIG_MAP, cm(namespace, "a"))
    async with informing(client, namespace) as (informer, events):
        await client.patch(CONFIG_MAP, "a", {"data": {"v": "1"}}, namespace)
        await eventually(lambda: len(events) == 2)
        assert informer.connected_since() is not None
        # Resuming from the list's version instead of the last event's would replay this patch.
        await asyncio.to_thread(server.kill if crash else server.stop)
        await eventually(lambda: informer.connected_since() is None)
        down = time.monotonic()
        await asyncio.to_thread(server.start)
        await eventually(lambda: (informer.connected_since() or 0.0) > down)
        await client.patch(CONFIG_MAP, "a", {"data": {"v": "2"}}, namespace)
        await client.create(CONFIG_MAP, cm(namespace, "b"))
        await client.delete(CONFIG_MAP, "a", namespace)
        await eventually(lambda: len(events) >= 5)
        assert events == [
            (EventType.ADDED, "a", "0"),
            (EventType.MODIFIED, "a", "1"),
            (EventType.MODIFIED, "a", "2"),
            (EventType.ADDED, "b", "0"),
            (EventType.DELETED, "a", "2"),
        ]
        assert informer.relists == 0  # resumed from its resourceVersion, no relist needed
        assert [o["metadata"]["name"] for o in informer.store.list()] == ["b"]
    await client.close()


async def test_after_compaction_the_informer_relists_and_delivers_what_it_missed(localkube_factory, tmp_path):
    server = localkube_factory(extra_args=["--compact-interval=0.1", "--compact-keep=0"])
    client = client_for(server)
    namespace = await new_namespace(client)
    for name in "abc":
        await client.create(CONFIG_MAP, cm(namespace, name))
    cable = Cable("127.0.0.1", int(server.url.rsplit(":", 1)[1]))
    await cable.plug()
    kubeconfig = yaml.safe_load(server.kubeconfig.read_text())
    kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{cable.port}"
    (tmp_path / "via-cable").write_text(yaml.safe_dump(kubeconfig))
    watched = Client.from_config(load_config(str(tmp_path / "via-cable")))
    async with informing(watched, namespace) as (informer, events):
        assert sorted(events) == [(EventType.ADDED, n, "0") for n in "abc"]
        last_seen = max(int(o["metadata"]["resourceVersion"]) for o in informer.store.list())
        await cable.unplug()
        await client.patch(CONFIG_MAP, "a", {"data": {"v": "1"}}, namespace)
        await client.delete(CONFIG_MAP, "b", namespace)
        await client.create(CONFIG_MAP, cm(namespace, "d"))

        async def compacted() -> bool:
            try:
                async for _ in client.watch(
                    CONFIG_MAP, namespace, resource_version=str(last_seen), timeout_seconds=1
                ):
                    pass
            except errors.Gone:
                return True
            return False

        await eventually(compacted, 5, "the store compacted past the informer's resourceVersion", every=0.05)
        await cable.plug()
        await eventually(lambda: len(events) == 6)
        assert informer.relists >= 1
        missed = [(EventType.MODIFIED, "a", "1"), (EventType.DELETED, "b", "0"), (EventType.ADDED, "d", "0")]
        assert sorted(events[3:]) == sorted(missed)
        assert sorted(o["metadata"]["name"] for o in informer.store.list()) == ["a", "c", "d"]
    await cable.unplug()
    await watched.close()
    await client.close()


async def test_handlers_added_late_get_the_cached_objects_first(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    await client.create(CONFIG_MAP, cm(namespace, "early"))
    async with informing(client, namespace) as (informer, _):
        late: list[Event] = []
        informer.add_handler(late.append)
        assert [(e.type, e.obj["metadata"]["name"]) for e in late] == [(EventType.ADDED, "early")]
    await client.close()


async def test_a_label_selector_limits_the_cache_to_matching_objects(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    owned = {"app.kubernetes.io/created-by": "kuberay-operator"}
    await client.create(CONFIG_MAP, {"metadata": {"name": "ours", "namespace": namespace, "labels": owned}})
    await client.create(CONFIG_MAP, {"metadata": {"name": "theirs", "namespace": namespace}})
    informer = Informer(
        client,
        CONFIG_MAP,
        namespaces=[namespace],
        label_selector="app.kubernetes.io/created-by=kuberay-operator",
    )
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 20)
    await client.create(
        CONFIG_MAP, {"metadata": {"name": "ours-too", "namespace": namespace, "labels": owned}}
    )
    await client.create(CONFIG_MAP, {"metadata": {"name": "theirs-too", "namespace": namespace}})
    await eventually(lambda: len(informer.store) == 2)
    await asyncio.sleep(0.2)
    assert sorted(o["metadata"]["name"] for o in informer.store.list()) == ["ours", "ours-too"]
    task.cancel()
    await client.close()


async def test_a_resync_redelivers_every_cached_object(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    for name in "ab":
        await client.create(CONFIG_MAP, cm(namespace, name))
    clock = FakeClock()
    informer = Informer(
        client, CONFIG_MAP, namespaces=[namespace], field_selector=NOT_ROOT_CA, resync_period=600, clock=clock
    )
    resyncs: list[str] = []
    informer.add_handler(lambda e: e.type is EventType.RESYNC and resyncs.append(e.obj["metadata"]["name"]))
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 20)
    await eventually(lambda: clock.sleepers > 0)
    clock.advance(599)
    await asyncio.sleep(0.05)
    assert resyncs == []
    clock.advance(1)
    await eventually(lambda: sorted(resyncs) == ["a", "b"])
    task.cancel()
    await client.close()
