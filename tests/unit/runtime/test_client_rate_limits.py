"""The API client's `--qps`/`--burst`: one token bucket per kind, as controller-runtime's REST client per
group-version-kind gives upstream's operator.

A mock transport answers (only the client's waiting is under test) and a fake clock stands still, so a
request that must wait for a token is seen pending until the clock moves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import httpx2

from kuberay.runtime.client import Client
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.resources import EVENT, POD
from support.eventually import loop_turns

POD_OBJECT = {"metadata": {"name": "p", "namespace": "ns"}}
EVENT_OBJECT = {"metadata": {"name": "e", "namespace": "ns"}}


def throttled_client(clock: FakeClock) -> tuple[Client, list[str]]:
    sent: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(f"{request.method} {request.url.path}")
        return httpx2.Response(200, json={})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler), base_url="https://api.test")
    return Client(http, qps=1.0, burst=1, clock=clock), sent


async def settles(request: Awaitable[object]) -> asyncio.Task[object]:
    task = asyncio.ensure_future(request)
    await loop_turns(5)
    return task


async def test_a_kind_that_spent_its_burst_waits_while_another_kind_goes_on() -> None:
    clock = FakeClock()
    client, sent = throttled_client(clock)
    await client.create(POD, POD_OBJECT)

    second_pod = await settles(client.create(POD, POD_OBJECT))
    assert not second_pod.done() and clock.sleepers == 1

    event = await settles(client.create(EVENT, EVENT_OBJECT))
    assert event.done()  # its own bucket: no wait behind the pods
    assert sent == ["POST /api/v1/namespaces/ns/pods", "POST /api/v1/namespaces/ns/events"]

    clock.advance(1.0)
    await second_pod
    assert sent[-1] == "POST /api/v1/namespaces/ns/pods"


async def test_a_kinds_status_writes_and_a_fenced_copy_share_its_bucket() -> None:
    clock = FakeClock()
    client, sent = throttled_client(clock)
    await client.create(POD, POD_OBJECT)

    status = await settles(client.update_status(POD, POD_OBJECT))
    fenced = await settles(client.fenced(lambda: True).create(POD, POD_OBJECT))
    assert not status.done() and not fenced.done()
    assert sent == ["POST /api/v1/namespaces/ns/pods"]

    clock.advance(1.0)
    await status
    assert not fenced.done()
    clock.advance(1.0)
    await fenced
    assert len(sent) == 3
