"""The manager: shared informers, controllers, leader election, the event recorder, and their lifecycle.

Start-up order, as controller-runtime's: informers start in every replica (a follower keeps a warm cache
and can take over at once); once all are synced the manager is ready; then, if leader election is on,
it waits to lead; then the event recorder and the controllers start. Only the leader ever reconciles.
Every replica also gives the C heap's free pages back now and then (`heap`).

Shutdown (`stop` set): the work queues stop taking keys, reconciles in flight finish (up to
`graceful_timeout`), the lease is released, informers stop. Losing the lease instead cancels the reconciles
in flight at once (as controller-runtime skips its graceful shutdown then: another replica may lead
already) and raises `LeadershipLost` from `run`, so the process can exit non-zero.

One informer per kind is shared by every controller that watches it; the cache selector for a kind (for
example, only the pods the operator made) is set with `selectors` before the first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from kuberay.runtime import heap
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock, SystemClock
from kuberay.runtime.controller import Controller
from kuberay.runtime.events import EventRecorder
from kuberay.runtime.informer import Informer
from kuberay.runtime.leaderelection import LeaderElector
from kuberay.runtime.metrics import RuntimeMetrics
from kuberay.runtime.resources import Resource

log = logging.getLogger(__name__)

DEFAULT_RESYNC_PERIOD = 10 * 3600.0  # controller-runtime's SyncPeriod


class Manager:
    def __init__(
        self,
        client: Client,
        metrics: RuntimeMetrics,
        *,
        namespaces: Sequence[str] | None = None,
        selectors: Mapping[Resource, str] | None = None,
        resync_period: float | None = DEFAULT_RESYNC_PERIOD,
        elector: LeaderElector | None = None,
        recorder: EventRecorder | None = None,
        clock: Clock | None = None,
        graceful_timeout: float = 30.0,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.namespaces = list(namespaces) if namespaces else None
        self.selectors = dict(selectors or {})
        self.resync_period = resync_period
        self.elector = elector
        self.recorder = recorder
        self.clock = clock or SystemClock()
        self.graceful_timeout = graceful_timeout
        self.controllers: list[Controller] = []
        self._informers: dict[Resource, Informer] = {}
        self._synced = asyncio.Event()
        self._started = False

    def informer(self, resource: Resource, *, optional: bool = False) -> Informer:
        """The shared informer of a kind (created on first use, before `run`). `optional`: the kind's API
        may not be served (`Informer`); it counts only where the informer is created, so ask for an
        optional kind before anything else uses it."""
        informer = self._informers.get(resource)
        if informer is None:
            if self._started:
                raise RuntimeError(f"informer for {resource} requested after the manager started")
            informer = Informer(
                self.client,
                resource,
                namespaces=self.namespaces,
                label_selector=self.selectors.get(resource),
                resync_period=self.resync_period,
                clock=self.clock,
                optional=optional,
            )
            self._informers[resource] = informer
        return informer

    def cache(self, resource: Resource) -> Store:
        return self.informer(resource).store

    def add(self, controller: Controller) -> None:
        controller.bind_metrics(self.metrics)
        if self.recorder is not None and controller.primary is not None:
            controller.bind_events(self.recorder, self.cache(controller.primary))
        for source in controller.sources:
            self.informer(source.resource).add_handler(controller.handler(source))
        self.controllers.append(controller)

    @property
    def ready(self) -> bool:
        """All informers have synced (the readiness of a follower as much as of the leader)."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading

    async def run(self, stop: asyncio.Event) -> None:
        """Runs until `stop` is set; raises `LeadershipLost` if the lease is lost first."""
        self._started = True
        informers = [
            asyncio.create_task(i.run(), name=f"informer {i.resource}") for i in self._informers.values()
        ]
        leader_tasks: list[asyncio.Task[Any]] = []
        workers: list[asyncio.Task[None]] = []
        stopping = asyncio.create_task(stop.wait())
        trimming = asyncio.create_task(heap.trim_periodically(self.clock), name="heap trim")
        try:
            await self._until(stopping, asyncio.gather(*(i.wait_synced() for i in self._informers.values())))
            if stop.is_set():
                return
            self._synced.set()
            log.info("caches synced (%d informers)", len(informers))
            if self.elector is not None:
                await self._until(stopping, self.elector.acquire())
                if stop.is_set():
                    return
                leader_tasks.append(asyncio.create_task(self.elector.hold(), name="lease renewal"))
            recording = None
            if self.recorder is not None:
                recording = asyncio.create_task(self.recorder.run(), name="event recorder")
                leader_tasks.append(recording)
            workers += [asyncio.create_task(c.run(), name=f"controller {c.name}") for c in self.controllers]
            log.info("starting %d controllers", len(workers))
            watched = [stopping, *leader_tasks, *informers]
            await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            lost = self.elector is not None and not self.elector.leading
            await self._drain(workers, 0 if lost else self.graceful_timeout)
            if self.recorder is not None and recording is not None and not recording.done() and not lost:
                # Events of the last reconciles are worth a moment; a dead API server is not worth more.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.recorder.flush(), 5)
            for task in [*leader_tasks, *informers]:
                if task.done() and not task.cancelled() and (error := task.exception()) is not None:
                    raise error
        finally:
            tasks = [stopping, trimming, *workers, *leader_tasks, *informers]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.elector is not None:
                await self.elector.release()

    async def _drain(self, workers: list[asyncio.Task[None]], timeout: float) -> None:
        for controller in self.controllers:
            controller.queue.shutdown()
        if workers:
            _, pending = (
                await asyncio.wait(workers, timeout=timeout) if timeout > 0 else (set(), set(workers))
            )
            for task in pending:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _until(self, stopping: asyncio.Task[bool], work: Awaitable[Any]) -> None:
        """Awaits `work` unless `stopping` completes first (then `work` is cancelled)."""
        task: asyncio.Future[Any] = asyncio.ensure_future(work)
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif (error := task.exception()) is not None:
            raise error
