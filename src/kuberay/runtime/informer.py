"""The informer: keeps a `Store` equal to the server's objects of one kind and tells handlers what changed.

The loop, per watched namespace (or once for all namespaces):
1. List, page by page (`limit`/`continue`), and remember the list's resourceVersion. Compare the result
   with the store and deliver the differences as events: ADDED for new keys, MODIFIED for changed
   resourceVersions, DELETED (with the last known state) for keys the list no longer has. On the first
   list that is simply ADDED for everything; after a 410 it is exactly what the watch missed, which is
   the guarantee lightkube's own watch does not give.
2. Watch from that resourceVersion with `allowWatchBookmarks`, applying each event to the store before
   calling handlers, and tracking the resourceVersion of every event and bookmark.
3. When the watch ends (server timeout) or the connection breaks (server restart), watch again from the
   last resourceVersion, after a backoff if it broke. When the server answers 410 Gone (the version was
   compacted), go back to 1.

An optional informer (`optional=True`: a kind of another project's API, cert-manager's, say) treats a 404
on its first list as "this API is not served": it is then synced and empty (`served` is False), as
controller-runtime's users avoid a cache that would never sync by asking discovery first, and it lists
again every `NOT_SERVED_PROBE` seconds, so an API installed after the operator (cert-manager applied once
`kuberay local up` runs, as the mTLS example says) is cached from then on, without a restart.

Handlers run synchronously in the informer's task, in event order, and must not block (controllers only
enqueue keys). After the first full list of every scope the informer is synced and calls `gc.freeze()`,
moving the bulk of the cache out of the cyclic collector's way. A periodic resync (if configured) delivers
RESYNC for every cached object.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kuberay.runtime import errors
from kuberay.runtime.cache import CachedObject, Store, prepare
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock, SystemClock
from kuberay.runtime.resources import ObjectKey, Resource

log = logging.getLogger(__name__)

# How often an optional informer lists a kind the server did not serve: the wait between installing the
# API (cert-manager) and the operator's noticing it.
NOT_SERVED_PROBE = 30.0


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    RESYNC = "RESYNC"


@dataclass(frozen=True)
class Event:
    type: EventType
    obj: CachedObject
    old: CachedObject | None = None


Handler = Callable[[Event], None]


class Informer:
    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        page_size: int = 500,
        watch_timeout_seconds: int = 300,
        retry_delays: tuple[float, float] = (0.2, 5.0),
        clock: Clock | None = None,
        optional: bool = False,
    ) -> None:
        self.client = client
        self.resource = resource
        self.optional = optional
        # Whether the server serves the kind: None until an optional informer's first list answers.
        self.served: bool | None = None if optional else True
        self.store = Store()
        self.label_selector = label_selector
        self.field_selector = field_selector
        # One list+watch per namespace; a cluster-scoped kind or "all namespaces" is the single scope None.
        self._scopes: list[str | None] = list(namespaces) if namespaces and resource.namespaced else [None]
        self._resync_period = resync_period
        self._page_size = page_size
        self._watch_timeout = watch_timeout_seconds
        self._retry_delays = retry_delays
        self._clock = clock or SystemClock()
        self._handlers: list[Handler] = []
        self._unsynced = set(self._scopes)
        # Per scope: since when (monotonic) it has been listing or watching without a break; None while
        # it is cut off from the server.
        self._connected_since: dict[str | None, float | None] = dict.fromkeys(self._scopes)
        self._synced = asyncio.Event()
        self.relists = 0  # lists after the first, i.e. recoveries from 410 Gone

    def add_handler(self, handler: Handler) -> None:
        """Registers a handler; objects already cached are delivered to it as ADDED first."""
        self._handlers.append(handler)
        for obj in self.store.list():
            handler(Event(EventType.ADDED, obj))

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def connected_since(self) -> float | None:
        """Since when (the clock's monotonic time) every scope has been listing or watching without a
        break; None while any is cut off from the server. A change made before that moment has reached the
        store or is on its way in the open watch; while it is None, the store can miss any change."""
        times = self._connected_since.values()
        if any(t is None for t in times):
            return None
        return max((t for t in times if t is not None), default=None)

    async def run(self) -> None:
        """Runs until cancelled."""
        async with asyncio.TaskGroup() as tasks:
            for scope in self._scopes:
                tasks.create_task(self._run_scope(scope))
            if self._resync_period:
                tasks.create_task(self._resync_loop(self._resync_period))

    async def _run_scope(self, namespace: str | None) -> None:
        # Where the next watch resumes: the version of the last event applied, kept even when a watch
        # breaks, so a reconnect neither replays (and briefly rolls the cache back to) older versions
        # nor asks for history the server may no longer have.
        position = _Position()
        failures = 0
        while True:
            if self._connected_since[namespace] is None:
                self._connected_since[namespace] = self._clock.monotonic()
            try:
                if position.resource_version is None:
                    position.resource_version = await self._relist(namespace)
                    self.served = True
                    self._scope_synced(namespace)
                await self._watch(namespace, position.resource_version, position)
                failures = 0
            except errors.Gone:
                log.info(
                    "%s: resourceVersion %s is gone; relisting", self.resource, position.resource_version
                )
                position.resource_version = None
                self.relists += 1
            except errors.KubeError as e:
                if isinstance(e, errors.NotFoundError) and self.optional and not self.served:
                    if self.served is None:
                        log.info(
                            "%s is not served; looking again every %.0fs", self.resource, NOT_SERVED_PROBE
                        )
                        self.served = False
                    # Each scope (a watched namespace) is synced by its own first answer.
                    self._scope_synced(namespace)
                    await self._clock.sleep(NOT_SERVED_PROBE)
                    continue
                self._connected_since[namespace] = None
                failures += 1
                base, cap = self._retry_delays
                delay = min(base * 2 ** min(failures - 1, 16), cap) * random.uniform(0.8, 1.2)
                log.warning("%s: %s; retrying in %.1fs", self.resource, e, delay)
                await self._clock.sleep(delay)

    async def _relist(self, namespace: str | None) -> str:
        listed = await self.client.list_all(
            self.resource,
            namespace,
            page_size=self._page_size,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        seen: set[ObjectKey] = set()
        for raw in listed.items:
            obj = prepare(raw)
            key = ObjectKey.of(obj)
            seen.add(key)
            old = self.store.get(key)
            if old is not None and _version(old) == _version(obj):
                continue
            self.store.upsert(obj)
            self._deliver(Event(EventType.ADDED if old is None else EventType.MODIFIED, obj, old))
        in_scope = (
            self.store.all_keys()
            if namespace is None
            else [k for k in self.store.all_keys() if k.namespace == namespace]
        )
        for key in in_scope:
            if key not in seen:
                gone = self.store.remove(key)
                if gone is not None:
                    self._deliver(Event(EventType.DELETED, gone, gone))
        return listed.resource_version

    async def _watch(self, namespace: str | None, start: str, position: _Position) -> None:
        """Applies watch events after `start` until the stream ends, advancing `position` with each."""
        # Spread reconnects, as client-go does, so many informers do not all rewatch at once.
        timeout = int(self._watch_timeout * random.uniform(1.0, 2.0))
        events = self.client.watch(
            self.resource,
            namespace,
            resource_version=start,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
        )
        async for event in events:
            kind = event.get("type")
            raw = event.get("object") or {}
            version = (raw.get("metadata") or {}).get("resourceVersion")
            if kind == "BOOKMARK":
                position.resource_version = version or position.resource_version
                continue
            obj = prepare(raw)
            key = ObjectKey.of(obj)
            if kind == "DELETED":
                old = self.store.remove(key)
                self._deliver(Event(EventType.DELETED, obj, old))
            elif kind in ("ADDED", "MODIFIED"):
                old = self.store.upsert(obj)
                self._deliver(Event(EventType.ADDED if old is None else EventType.MODIFIED, obj, old))
            position.resource_version = version or position.resource_version

    async def _resync_loop(self, period: float) -> None:
        await self._synced.wait()
        while True:
            await self._clock.sleep(period)
            for obj in self.store.list():
                self._deliver(Event(EventType.RESYNC, obj, obj))

    def _scope_synced(self, namespace: str | None) -> None:
        if namespace in self._unsynced:
            self._unsynced.discard(namespace)
            if not self._unsynced:
                gc.freeze()
                self._synced.set()

    def _deliver(self, event: Event) -> None:
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:
                log.exception(
                    "%s: event handler failed on %s %s", self.resource, event.type, ObjectKey.of(event.obj)
                )


@dataclass
class _Position:
    """The resourceVersion a scope's next watch starts from; None: list first."""

    resource_version: str | None = None


def _version(obj: CachedObject) -> str:
    return str(obj["metadata"].get("resourceVersion") or "")
