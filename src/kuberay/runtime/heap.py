"""Giving the C heap's free memory back to the system, now and then.

Once the operator is warm its Python objects stay level, but the C library's heap under them does not:
objects over 512 bytes (watch events, response bodies, the hash tables of cached objects) come from
`malloc`, and one long-lived block near the heap's top keeps the free space below it from going back. In a
soak this free space grew by ~0.1 MB a minute (glibc's `mallinfo2`: in use level at ~15 MB, free from 1.2
to 2.6 MB in 14 minutes) and made most of the operator's RSS growth. glibc's `malloc_trim(0)` returns every
whole free page of the heap, wherever it lies; `trim_periodically` calls it every `TRIM_INTERVAL_S`
seconds (a few milliseconds each time), and does nothing where the C library has no `malloc_trim` (musl,
macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

from kuberay.runtime.clock import Clock

TRIM_INTERVAL_S = 60.0


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    trim: Callable[[int], int] | None = getattr(ctypes.CDLL(name), "malloc_trim", None)
    return trim


async def trim_periodically(clock: Clock, interval: float = TRIM_INTERVAL_S) -> None:
    """Trims the C heap every `interval` seconds until cancelled (returns at once without `malloc_trim`)."""
    trim = _malloc_trim()
    if trim is None:
        return
    while True:
        await clock.sleep(interval)
        trim(0)
