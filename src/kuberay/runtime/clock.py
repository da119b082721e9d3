"""Time, as the runtime and the reconcilers see it.

Everything that waits or stamps a time takes a `Clock`: the work queue's delays and backoff, token buckets,
leader election, scale expectations, events, and the reconcilers' TTLs and deadlines. Production uses
`SystemClock`; tests use `FakeClock`, whose time moves only when the test calls `advance`, so a test of a
one-hour TTL runs in microseconds and no assertion depends on how fast the machine is.

`monotonic()` is for durations and deadlines; `now()` is wall time (aware, UTC) for timestamps written to
objects. `FakeClock` moves both together.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards; only differences mean anything."""
        ...

    def now(self) -> datetime:
        """Wall time, timezone-aware, UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Returns once `seconds` have passed on this clock (at once when `seconds <= 0`)."""
        ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


class FakeClock:
    """A clock that stands still until `advance` is called; sleepers wake in deadline order."""

    def __init__(self, start: datetime | None = None) -> None:
        self._monotonic = 1000.0
        self._wall = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()

    def monotonic(self) -> float:
        return self._monotonic

    def now(self) -> datetime:
        return self._wall

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._monotonic + seconds, next(self._sequence), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many sleeps are pending (cancelled ones excluded)."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

    def advance(self, seconds: float) -> None:
        """Moves time forward and wakes every sleeper whose deadline has passed."""
        self._monotonic += seconds
        self._wall += timedelta(seconds=seconds)
        while self._sleepers and self._sleepers[0][0] <= self._monotonic:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)


async def sleep_until(clock: Clock, deadline: float) -> None:
    """Sleeps until `clock.monotonic()` reaches `deadline`; robust to time that moved before the sleep began."""
    while (remaining := deadline - clock.monotonic()) > 0:
        await clock.sleep(remaining)
