"""Runs localkube's in-process controllers on the server's event loop.

Each controller declares the store prefixes it watches, turns events into keys to reconcile (`observe`),
and reconciles one key at a time (`reconcile`), returning in how many seconds to look at that key again
(or None). Reconciles are synchronous: they read and write through the store or the REST layer, which are
synchronous too, so a reconcile sees and changes the world atomically with respect to API requests.

Per prefix: the initial state is replayed as ADDED events, then the watch streams from the revision that
state reflects, each event going to every controller that observes the prefix, in the order they were
given; a dropped watch (too slow) replays the state again, so no change is missed. Keys are
deduplicated while pending. A reconcile that raises is logged and retried with a doubling delay (up to
30 s); it never stops the controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import Protocol

from localkube.storage import Event, WatchOverflow
from localkube.storage.view import StoreView

log = logging.getLogger(__name__)

RETRY_INITIAL = 0.5
RETRY_MAX = 30.0


class Controller(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The store key prefixes whose events the controller observes."""
        ...

    def observe(self, event: Event) -> Iterable[str]:
        """Updates the controller's own indexes from an event; returns the keys that need a reconcile."""
        ...

    def reconcile(self, key: str) -> float | None:
        """Brings `key` to its desired state; returns seconds until it should be looked at again."""
        ...


class Runner:
    """Drives a set of controllers until `stop()`."""

    def __init__(self, store: StoreView, controllers: Iterable[Controller]) -> None:
        self._store = store
        self._controllers = list(controllers)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        # One watch per prefix, whatever the number of controllers observing it (eight watch pods).
        observers: dict[str, list[tuple[Controller, _KeyQueue]]] = {}
        for controller in self._controllers:
            queue = _KeyQueue()
            for prefix in controller.prefixes:
                observers.setdefault(prefix, []).append((controller, queue))
            self._tasks.append(asyncio.create_task(self._work(controller, queue)))
        for prefix, observing in observers.items():
            self._tasks.append(asyncio.create_task(self._feed(prefix, observing)))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _feed(self, prefix: str, observing: list[tuple[Controller, _KeyQueue]]) -> None:
        while True:
            revision = self._store.revision
            for key in self._store.keys(prefix):
                obj = self._store.get(key)
                if obj is not None:
                    _observe(observing, Event("ADDED", key, revision, b"", obj))
            watch = self._store.watch(prefix, revision)
            try:
                async for event in watch:
                    _observe(observing, event)
            except WatchOverflow:
                names = ", ".join(controller.name for controller, _ in observing)
                log.warning("%s fell behind on %s; replaying the current state", names, prefix)
            finally:
                watch.close()

    async def _work(self, controller: Controller, queue: _KeyQueue) -> None:
        loop = asyncio.get_running_loop()
        failures: dict[str, int] = {}
        while True:
            key = await queue.pop()
            try:
                recheck = controller.reconcile(key)
            except Exception:
                count = failures.get(key, 0)
                failures[key] = count + 1
                delay = min(RETRY_INITIAL * 2**count, RETRY_MAX)
                log.exception("%s: reconcile of %s failed; retrying in %.1f s", controller.name, key, delay)
                loop.call_later(delay, queue.add, key)
                continue
            failures.pop(key, None)
            if recheck is not None:
                loop.call_later(max(recheck, 0.0), queue.add, key)


def _observe(observing: list[tuple[Controller, _KeyQueue]], event: Event) -> None:
    for controller, queue in observing:
        queue.add_all(controller.observe(event))


class _KeyQueue:
    """Pending keys in arrival order, each at most once."""

    def __init__(self) -> None:
        self._pending: dict[str, None] = {}
        self._ready = asyncio.Event()

    def add(self, key: str) -> None:
        self._pending[key] = None
        self._ready.set()

    def add_all(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.add(key)

    async def pop(self) -> str:
        while not self._pending:
            self._ready.clear()
            await self._ready.wait()
        key = next(iter(self._pending))
        del self._pending[key]
        return key
