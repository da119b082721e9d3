"""The stored sessions and what the server reads of them.

The list of sessions is the `cluster-metadata/` keys (names only: a few hundred bytes a session), re-listed
at most every `index_ttl` seconds. Everything else is loaded when a request needs it and kept in the
byte-bounded cache: a session costs memory only while it is being looked at. Blocking storage calls run in
threads.
"""

from __future__ import annotations

import asyncio
import json
import posixpath
import time
from dataclasses import dataclass
from typing import Any

from kuberay.history import layout
from kuberay.history.server.cache import ByteCache
from kuberay.history.storage import NoSuchKey, Storage

# Parsed JSON takes several times the bytes it was parsed from; the cache is charged this much per byte.
JSON_COST = 6


@dataclass(frozen=True)
class StoredSession:
    cluster: layout.ClusterRef
    session: str

    def info(self) -> dict[str, Any]:
        """The session as `/clusters` lists it."""
        return layout.session_info(self.cluster, self.session)


class Catalog:
    def __init__(self, storage: Storage, root: str, cache: ByteCache, index_ttl: float = 5.0) -> None:
        self.storage = storage
        self.root = root
        self.cache = cache
        self.index_ttl = index_ttl
        self._index: list[StoredSession] = []
        self._index_at = -float("inf")
        self._loading: dict[str, asyncio.Task[Any | None]] = {}  # the loads under way, by cache key

    async def sessions(self) -> list[StoredSession]:
        """Every stored session, newest first."""
        if time.monotonic() - self._index_at > self.index_ttl:
            keys = await asyncio.to_thread(
                self.storage.keys, posixpath.join(self.root, layout.CLUSTER_METADATA_DIR)
            )
            found = []
            for key in keys:
                try:
                    found.append(StoredSession(*layout.metadata_ref(key, self.root)))
                except layout.LayoutError:
                    continue  # not ours
            found.sort(key=lambda s: s.session, reverse=True)
            self._index, self._index_at = found, time.monotonic()
        return self._index

    async def find(
        self, namespace: str, kind: str, name: str, session: str = "latest"
    ) -> StoredSession | None:
        """A session of a RayCluster by its cluster name (whoever owns it, as upstream resolves it), or of a
        RayJob or RayService by the owner's name; `latest` is the newest."""
        kind = kind.lower()
        for stored in await self.sessions():  # newest first
            cluster = stored.cluster
            if cluster.namespace != namespace:
                continue
            if kind == layout.RAYCLUSTER:
                if cluster.name != name:
                    continue
            elif cluster.kind != kind or cluster.owner_name != name:
                continue
            if session in ("latest", stored.session):
                return stored
        return None

    async def _load(self, key: str, parse: bool) -> Any | None:
        """A stored object, from the cache or else read (and parsed) once however many requests want it at
        the same time: the first starts the load, the others await the same one, so that a large session's
        cold first requests hold one copy of it, not one each."""
        cache_key = ("json:" if parse else "raw:") + key
        cached = self.cache.get(cache_key)
        if cached is not None:
            return cached
        loading = self._loading.get(cache_key)
        if loading is None:
            loading = asyncio.create_task(self._read(key, parse, cache_key))
            self._loading[cache_key] = loading
            loading.add_done_callback(lambda _: self._loading.pop(cache_key, None))
        # Shielded: a request that goes away does not cancel the load the others wait for.
        return await asyncio.shield(loading)

    async def _read(self, key: str, parse: bool, cache_key: str) -> Any | None:
        try:
            raw = await asyncio.to_thread(self.storage.get, key)
        except NoSuchKey:
            return None
        # Parsed in a thread too: a large session's parse would stall every other request on the loop.
        value = await asyncio.to_thread(json.loads, raw) if parse else raw
        self.cache.put(cache_key, value, len(raw) * (JSON_COST if parse else 1))
        return value

    def endpoint_keys(self, stored: StoredSession, path: str) -> list[str]:
        endpoints = stored.cluster.endpoints_dir(self.root, stored.session)
        return [posixpath.join(endpoints, key) for key in layout.stored_keys(path)]

    async def _first(self, keys: list[str], parse: bool) -> Any | None:
        for key in keys:
            found = await self._load(key, parse)
            if found is not None:
                return found
        return None

    async def endpoint(self, stored: StoredSession, path: str) -> bytes | None:
        """The stored answer of a dashboard endpoint, as the collector got it."""
        raw: bytes | None = await self._first(self.endpoint_keys(stored, path), parse=False)
        return raw

    async def endpoint_json(self, stored: StoredSession, path: str) -> Any | None:
        return await self._first(self.endpoint_keys(stored, path), parse=True)

    async def uri_json(self, stored: StoredSession, uri: str) -> Any | None:
        """The stored answer of a URI the collector keys with its query (`layout.URI_KEYED`)."""
        endpoints = stored.cluster.endpoints_dir(self.root, stored.session)
        return await self._load(posixpath.join(endpoints, layout.uri_key(uri)), parse=True)

    async def session_end(self, stored: StoredSession) -> dict[str, Any] | None:
        """The session's end record (`layout.session_end`), or None when it has none (or none this server
        can read). Not cached: a live session's collector writes it late, then again when its upload is
        done, and it is a few hundred bytes."""
        key = stored.cluster.session_end_key(self.root, stored.session)
        try:
            record = json.loads(await asyncio.to_thread(self.storage.get, key))
        except (NoSuchKey, ValueError):
            return None
        return record if isinstance(record, dict) else None

    async def nodes_with_logs(self, stored: StoredSession) -> list[str]:
        names = await asyncio.to_thread(
            self.storage.list_dirs, stored.cluster.session_dir(self.root, stored.session)
        )
        return [n for n in names if n != layout.FETCHED_ENDPOINTS_DIR]

    async def log_files(self, stored: StoredSession, node_id: str) -> list[str]:
        """The node's stored log files, relative to its logs directory."""
        base = stored.cluster.logs_dir(self.root, stored.session, node_id)
        keys = await asyncio.to_thread(self.storage.keys, base)  # not cached: a live session's grow
        return [k[len(base) + 1 :] for k in keys]

    def log_key(self, stored: StoredSession, node_id: str, filename: str) -> str:
        base = stored.cluster.logs_dir(self.root, stored.session, node_id)
        return posixpath.join(base, filename)
