"""The work queue of a controller: deduplicated keys, one worker per key, delays, backoff, order and fairness.

Invariants (client-go's workqueue semantics, which level-triggered reconcilers rely on):
- A key is at most once in the queue: adding a key that is already waiting is a no-op (`dirty`).
- A key is handed to at most one worker at a time: adding a key while it is being processed marks it dirty,
  and `done` puts it back at the tail, so the next reconcile sees the newest state without running twice at
  once.
- Order: keys are handed out by rank, lowest first (ties in the order they were added). A key new to the
  queue is ranked at the time it came; each later add of the same key (an event, a requeue, a retry) ranks it
  `PASS_COST_S` after its previous rank. So objects are finished in the order they came: the pass that makes
  an older RayCluster ready (its pods' events) goes ahead of the first passes of clusters that came more
  than a few passes' worth later, rather than behind every one of them (a plain FIFO finishes all clusters
  late and together when the queue is long).
- Fairness: a key that requeues itself over and over (a huge scale-up done in batches, kuberay#3909) pays
  `PASS_COST_S` per pass, so once it has used more than one pass per `PASS_COST_S` of its age it ranks
  behind newer keys and takes turns with them instead of holding a worker; a key re-added while it is
  being processed still waits for that pass to end. A key's rank is kept while it has work pending
  (waiting, delayed or being processed) and dropped when it has none, so the queue holds nothing for
  objects it is done with.
- Delayed adds (`add_after`, `add_rate_limited`) wait in a heap ordered by due time; the earliest due time
  of a key wins. They are promoted by the workers themselves when they call `get`, so no timer task exists.
- After `shutdown`, adds are ignored and `get` raises `ShutDown` once nothing is left to hand out.

All time comes from the injected `Clock`, so tests drive delays and backoff with `FakeClock.advance`.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from kuberay.runtime.clock import Clock, sleep_until
from kuberay.runtime.errors import ControllerRuntimeError
from kuberay.runtime.metrics import QueueMetrics
from kuberay.runtime.ratelimit import RequeueRateLimiter

K = TypeVar("K", bound=Hashable)

# What one pass costs a key in rank, in seconds of age: small against a long queue's wait, so an object's
# next pass goes ahead of objects that came a few seconds after it.
PASS_COST_S = 0.5


class ShutDown(ControllerRuntimeError):
    """The queue was shut down and holds nothing more to process."""


class WorkQueue(Generic[K]):
    def __init__(
        self,
        clock: Clock,
        *,
        rate_limiter: RequeueRateLimiter | None = None,
        metrics: QueueMetrics | None = None,
    ):
        self._clock = clock
        self.rate_limiter = rate_limiter or RequeueRateLimiter(clock)
        self._metrics = metrics
        self._queue: list[tuple[float, int, K]] = []  # heap of (rank, add sequence, key)
        self._rank: dict[K, float] = {}
        self._dirty: set[K] = set()
        self._processing: dict[K, float] = {}  # key -> monotonic start
        self._added_at: dict[K, float] = {}
        self._waiting: list[tuple[float, int, K]] = []
        self._waiting_due: dict[K, float] = {}
        self._sequence = itertools.count()
        self._changed = asyncio.Event()
        self._shutting_down = False
        if metrics is not None:
            self.publish(metrics)

    def publish(self, metrics: QueueMetrics) -> None:
        """Reports this queue's activity to `metrics` from now on."""
        self._metrics = metrics
        metrics.observe(lambda: len(self._queue), self._unfinished_seconds, self._longest_running_seconds)

    def __len__(self) -> int:
        """Keys ready to be handed out (not those delayed, not those being processed)."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock.monotonic())
        if self._metrics is not None:
            self._metrics.added()
        previous = self._rank.get(key)
        rank = self._clock.monotonic() if previous is None else previous + PASS_COST_S
        self._rank[key] = rank
        if key not in self._processing:
            self._push(key)

    def add_after(self, key: K, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        if self._metrics is not None:
            self._metrics.retried()
        due = self._clock.monotonic() + delay
        if self._waiting_due.get(key, float("inf")) <= due:
            return
        self._waiting_due[key] = due
        heapq.heappush(self._waiting, (due, next(self._sequence), key))
        self._notify()

    def add_rate_limited(self, key: K) -> None:
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Ends the key's backoff: its next failure starts again from the base delay."""
        self.rate_limiter.forget(key)

    def retries(self, key: K) -> int:
        return self.rate_limiter.retries(key)

    async def get(self) -> K:
        """Waits for a key, marks it as being processed and returns it; pair every get with `done`."""
        while True:
            self._promote_due()
            if self._queue:
                _, _, key = heapq.heappop(self._queue)
                self._dirty.discard(key)
                now = self._clock.monotonic()
                self._processing[key] = now
                added = self._added_at.pop(key, now)
                if self._metrics is not None:
                    self._metrics.started(now - added)
                return key
            if self._shutting_down:
                raise ShutDown
            await self._wait_for_change()

    def done(self, key: K) -> None:
        started = self._processing.pop(key, None)
        if started is not None and self._metrics is not None:
            self._metrics.finished(self._clock.monotonic() - started)
        if key in self._dirty:
            self._push(key)
        elif key not in self._waiting_due:
            self._rank.pop(key, None)

    def shutdown(self) -> None:
        """Stops accepting keys, drops delayed ones, and wakes the workers so they can finish."""
        self._shutting_down = True
        self._waiting.clear()
        self._waiting_due.clear()
        self._rank = {
            key: rank for key, rank in self._rank.items() if key in self._dirty or key in self._processing
        }
        self._notify()

    def _push(self, key: K) -> None:
        heapq.heappush(self._queue, (self._rank[key], next(self._sequence), key))
        self._notify()

    def _promote_due(self) -> None:
        now = self._clock.monotonic()
        while self._waiting and self._waiting[0][0] <= now:
            due, _, key = heapq.heappop(self._waiting)
            if self._waiting_due.get(key) == due:
                del self._waiting_due[key]
                self.add(key)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait_for_change(self) -> None:
        changed = asyncio.ensure_future(self._changed.wait())
        waiters: set[asyncio.Future[Any]] = {changed}
        if self._waiting:
            waiters.add(asyncio.ensure_future(sleep_until(self._clock, self._waiting[0][0])))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def _unfinished_seconds(self) -> float:
        now = self._clock.monotonic()
        return sum(now - start for start in self._processing.values())

    def _longest_running_seconds(self) -> float:
        now = self._clock.monotonic()
        return max((now - start for start in self._processing.values()), default=0.0)
