"""localkube's API throughput over HTTPS: create, update, get, list, watch, and watch fan-out. Printed only.

    python -m benchmarks.localkube_api [--objects 2000] [--concurrency 16] [--watchers 20]

Starts `python -m localkube serve` on a fresh data directory (as the tests do, through
tests/support/localkube_process.py) and drives it with httpx over HTTP/1.1 keep-alive connections:
- create / update / get: N ConfigMaps with C concurrent clients, requests per second;
- list: the whole collection, full lists per second and objects per second;
- watch: one watcher while N updates are written, events per second delivered;
- fan-out: W watchers on the same collection while N creates are written, the time until every
  watcher has seen every event, and events delivered per second in total.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.localkube_process import LocalKubeProcess  # noqa: E402

NAMESPACE = "default"
COLLECTION = f"/api/v1/namespaces/{NAMESPACE}/configmaps"


def _client(server: LocalKubeProcess, context: ssl.SSLContext, connections: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url,
        verify=context,
        headers={"Authorization": f"Bearer {server.token}"},
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        timeout=60,
    )


async def _fan(count: int, concurrency: int, work: Callable[[int], Awaitable[None]]) -> float:
    """Runs work(0..count-1) with `concurrency` workers; returns the elapsed seconds."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(count):
        queue.put_nowait(index)

    async def worker() -> None:
        while not queue.empty():
            await work(queue.get_nowait())

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def _report(what: str, count: int, seconds: float, unit: str = "requests") -> None:
    print(f"{what:<34} {count:>7} {unit:<9} {seconds:7.2f} s   {count / seconds:9.0f} {unit}/s")


async def _watch_until(client: httpx.AsyncClient, revision: str, expected: int) -> float:
    """Watches the collection from `revision` until `expected` events arrived; returns when it did."""
    params = {"watch": "true", "resourceVersion": revision}
    seen = 0
    async with client.stream("GET", COLLECTION, params=params) as stream:
        async for line in stream.aiter_lines():
            if line:
                seen += 1
                if seen >= expected:
                    return time.perf_counter()
    raise RuntimeError(f"the watch ended after {seen} of {expected} events")


async def run(objects: int, concurrency: int, watchers: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        server = LocalKubeProcess(Path(directory)).start()
        try:
            context = server.ssl_context()
            async with _client(server, context, concurrency) as client:
                body = {"metadata": {"name": ""}, "data": {"key": "value" * 20}}

                async def create(index: int) -> None:
                    made = {**body, "metadata": {"name": f"cm-{index}"}}
                    (await client.post(COLLECTION, json=made)).raise_for_status()

                _report("create", objects, await _fan(objects, concurrency, create))

                rounds = iter(range(1_000_000))

                async def update(index: int) -> None:
                    current = (await client.get(f"{COLLECTION}/cm-{index}")).json()
                    current["data"]["key"] = f"update-{next(rounds)}"
                    (
                        await client.put(f"{COLLECTION}/cm-{index}", content=orjson.dumps(current))
                    ).raise_for_status()

                _report("get + update", objects, await _fan(objects, concurrency, update), "pairs")

                async def get(index: int) -> None:
                    (await client.get(f"{COLLECTION}/cm-{index}")).raise_for_status()

                _report("get", objects, await _fan(objects, concurrency, get))

                lists = 20
                started = time.perf_counter()
                for _ in range(lists):
                    (await client.get(COLLECTION)).raise_for_status()
                elapsed = time.perf_counter() - started
                _report(f"list of {objects}", lists, elapsed, "lists")
                _report("  objects listed", lists * objects, elapsed, "objects")

                revision = (await client.get(COLLECTION, params={"limit": "1"})).json()["metadata"][
                    "resourceVersion"
                ]
                async with _client(server, context, 1) as watcher:
                    watching = asyncio.create_task(_watch_until(watcher, revision, objects))
                    started = time.perf_counter()
                    await _fan(objects, concurrency, update)
                    _report("watch (1 watcher, N updates)", objects, await watching - started, "events")

                revision = (await client.get(COLLECTION, params={"limit": "1"})).json()["metadata"][
                    "resourceVersion"
                ]
                watch_clients = [_client(server, context, 1) for _ in range(watchers)]
                try:
                    tasks = [asyncio.create_task(_watch_until(w, revision, objects)) for w in watch_clients]
                    await asyncio.sleep(0.5)  # let every watch connect before the writes start

                    async def create_more(index: int) -> None:
                        made = {**body, "metadata": {"name": f"fan-{index}"}}
                        (await client.post(COLLECTION, json=made)).raise_for_status()

                    started = time.perf_counter()
                    await _fan(objects, concurrency, create_more)
                    finished = max(await asyncio.gather(*tasks))
                    _report(
                        f"fan-out ({watchers} watchers)", objects * watchers, finished - started, "events"
                    )
                finally:
                    await asyncio.gather(*(w.aclose() for w in watch_clients))
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--watchers", type=int, default=20)
    arguments = parser.parse_args()
    asyncio.run(run(arguments.objects, arguments.concurrency, arguments.watchers))


if __name__ == "__main__":
    main()
