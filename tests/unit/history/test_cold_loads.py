"""The server's concurrent cold loads of one stored object share one read and parse (issue 52, item 2)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest

from kuberay.history.server.app import HistoryApp
from kuberay.history.server.auth import Token
from kuberay.history.server.cache import ByteCache
from kuberay.history.server.catalog import Catalog
from kuberay.history.storage import LocalDirectory
from unit.history.stored import JOB_CLUSTER, SESSION, Store


class CountingCatalog(Catalog):
    """Counts the loads requests start, so that the test knows when all of them are under way."""

    entered: dict[str, int]

    async def _load(self, key: str, parse: bool) -> object | None:
        self.entered[key] = self.entered.get(key, 0) + 1
        return await super()._load(key, parse)


class CountingStorage(LocalDirectory):
    """Counts the reads of each key; reads wait for `release`, so that every request is in flight first."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: dict[str, int] = {}
        self.release = threading.Event()

    def get(self, key: str) -> bytes:
        self.reads[key] = self.reads.get(key, 0) + 1
        self.release.wait(30)
        return super().get(key)


@pytest.mark.parametrize("cache_bytes", [64 << 20, 1024], ids=["fits-the-cache", "larger-than-the-cache"])
async def test_concurrent_cold_requests_for_one_session_read_and_parse_it_once(
    tmp_path: Path, cache_bytes: int
) -> None:
    store = Store(tmp_path)
    store.session(JOB_CLUSTER)
    jobs = [
        {"job_id": f"{i:08x}", "status": "SUCCEEDED", "entrypoint": "python x.py " * 20} for i in range(2000)
    ]
    store.answer(JOB_CLUSTER, "restful__api__jobs", jobs)
    storage = CountingStorage(tmp_path)
    cache = ByteCache(cache_bytes)
    catalog = CountingCatalog(storage, "", cache, index_ttl=3600)
    catalog.entered = {}
    app = HistoryApp(catalog, Token(""), None).build()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://history") as client:
        assert (await client.get("/enter_cluster/team-a/rayjob/train")).status_code == 200
        requests = [asyncio.create_task(client.get("/api/jobs/")) for _ in range(8)]
        key = f"{JOB_CLUSTER.endpoints_dir('', SESSION)}/restful__api__jobs"
        while catalog.entered.get(key, 0) < 8:
            await asyncio.sleep(0)  # until every request has looked in the cache and started or joined a read
        storage.release.set()
        answers = await asyncio.gather(*requests)
    assert [a.status_code for a in answers] == [200] * 8
    assert all(a.json() == answers[0].json() for a in answers)
    assert storage.reads[key] == 1  # one read, hence one parse, for the eight requests
    assert cache.bytes <= cache.max_bytes  # within the cache's bound, kept or not
