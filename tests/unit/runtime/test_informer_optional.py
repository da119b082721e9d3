"""An optional informer (a kind of another project's API, cert-manager's) whose first list answers 404 is
synced and empty, so a manager without that API still becomes ready (upstream asks discovery before it
registers such a cache), and looks again now and then, so the API installed later is cached without a
restart; a served kind lists as any other, and a 404 of a required kind is retried."""

from __future__ import annotations

import asyncio
from typing import Any

from kuberay.runtime import errors
from kuberay.runtime.client import ObjectList
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.informer import NOT_SERVED_PROBE, Informer
from kuberay.runtime.resources import Resource

CERTIFICATE = Resource("cert-manager.io/v1", "Certificate", "certificates")


class Server:
    """Answers the informer's list: 404 when the API is not served, else one object and a watch that waits."""

    def __init__(self, served: bool) -> None:
        self.served = served
        self.lists = 0

    async def list_all(self, resource: Resource, namespace: str | None, **_: Any) -> ObjectList:
        self.lists += 1
        if not self.served:
            raise errors.NotFoundError("the server could not find the requested resource", status=404)
        item = {"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "1"}}
        return ObjectList([item], "1", "")

    async def watch(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.Event().wait()
        yield {}  # pragma: no cover


async def run(informer: Informer) -> asyncio.Task[None]:
    task = asyncio.create_task(informer.run())
    for _ in range(100):
        await asyncio.sleep(0)
    return task


async def test_an_optional_kind_not_served_is_synced_empty_and_cached_once_installed() -> None:
    server, clock = Server(served=False), FakeClock()
    informer = Informer(server, CERTIFICATE, optional=True, clock=clock)  # type: ignore[arg-type]
    task = await run(informer)
    assert (informer.synced, informer.served, len(informer.store), server.lists) == (True, False, 0, 1)
    clock.advance(NOT_SERVED_PROBE)
    for _ in range(100):
        await asyncio.sleep(0)
    assert (informer.served, len(informer.store), server.lists) == (False, 0, 2)
    server.served = True  # the API installed after the operator started
    clock.advance(NOT_SERVED_PROBE)
    for _ in range(100):
        await asyncio.sleep(0)
    assert (informer.synced, informer.served, len(informer.store), server.lists) == (True, True, 1, 3)
    task.cancel()


async def test_an_optional_kind_not_served_is_synced_in_every_watched_namespace() -> None:
    server = Server(served=False)
    informer = Informer(server, CERTIFICATE, namespaces=["a", "b", "c"], optional=True, clock=FakeClock())  # type: ignore[arg-type]
    task = await run(informer)
    assert (informer.synced, informer.served, server.lists) == (True, False, 3)
    task.cancel()


async def test_an_optional_kind_served_is_cached() -> None:
    server = Server(served=True)
    informer = Informer(server, CERTIFICATE, optional=True, clock=FakeClock())  # type: ignore[arg-type]
    task = await run(informer)
    assert (informer.synced, informer.served, len(informer.store)) == (True, True, 1)
    task.cancel()


async def test_a_required_kind_not_found_is_retried() -> None:
    server, clock = Server(served=False), FakeClock()
    informer = Informer(server, CERTIFICATE, clock=clock)  # type: ignore[arg-type]
    task = await run(informer)
    assert not informer.synced
    clock.advance(10)
    for _ in range(100):
        await asyncio.sleep(0)
    assert server.lists == 2 and not informer.synced
    task.cancel()
