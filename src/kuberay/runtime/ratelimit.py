"""Rate limiters: a token bucket, and the work queue's per-item exponential backoff combined with it.

`TokenBucket` hands out tokens at `rate` per second up to `burst` saved; `reserve()` takes a token now and
says how long the caller must wait before using it (a reservation, never a refusal), `acquire()` waits that
long on the clock. The client uses it for `--qps`/`--burst`; the work queue uses one for all rate-limited
requeues of a controller.

`ItemBackoff` is controller-runtime's ItemExponentialFailureRateLimiter: the n-th consecutive failure of an
item waits `base * 2**n`, capped at `cap`; `forget` resets the item after a success. `RequeueRateLimiter` is
the maximum of both, as controller-runtime's default controller rate limiter (5 ms .. 1000 s, 10 qps, 100
burst).
"""

from __future__ import annotations

from collections.abc import Hashable

from kuberay.runtime.clock import Clock


class TokenBucket:
    def __init__(self, rate: float, burst: int, clock: Clock) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"token bucket needs rate > 0 and burst >= 1, got rate={rate} burst={burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def reserve(self) -> float:
        """Takes one token and returns the seconds to wait before it may be used (0 when one was saved)."""
        now = self._clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)


class ItemBackoff:
    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        # 2**failures overflows a float long after the cap is reached; stop doubling there.
        return min(self.base * 2.0 ** min(failures, 64), self.cap)

    def retries(self, item: Hashable) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)


class RequeueRateLimiter:
    """The delay of a rate-limited requeue: the larger of the item's backoff and the shared bucket's wait."""

    def __init__(
        self, clock: Clock, *, base: float = 0.005, cap: float = 1000.0, rate: float = 10.0, burst: int = 100
    ):
        self.backoff = ItemBackoff(base, cap)
        self.bucket = TokenBucket(rate, burst, clock)

    def when(self, item: Hashable) -> float:
        return max(self.backoff.when(item), self.bucket.reserve())

    def retries(self, item: Hashable) -> int:
        return self.backoff.retries(item)

    def forget(self, item: Hashable) -> None:
        self.backoff.forget(item)
