"""The operator's C heap: where glibc puts large buffers, and giving its free memory back now and then.

Once the operator is warm its Python objects stay level, but the C library's heap under them does not.
glibc serves a block of at least its mmap threshold (128 KiB at start) with a mapping of its own, returned
whole on `free`; but its threshold is dynamic: the first such block freed raises the threshold to that
block's size (up to 32 MiB), and its trim threshold (how much free space the heap's top keeps) to twice
that, so from then on blocks that size are cut from the heap's top. The operator's imports alone raise both
(each compiled module is read whole, some over 128 KiB), and after that every socket read of asyncio's
transports (a 256 KiB buffer, shrunk to the bytes read) and every large answer is carved from the heap and
freed again, so the heap's free space fills with holes that the objects allocated between them keep from
going back. A soak measured it
(glibc's `malloc_info`): in use level at ~15.8 MB, the heap's size growing ~0.1 MB a minute, its free
chunks of 4 KiB and more growing from 0.15 to 1.4 MB in 12 minutes. `pin_thresholds`, called once at
start, sets both back to glibc's starting values, which also ends their raising, and trims what the raised
ones kept: such buffers get mappings of their own for good.

What remains is the ordinary churn of smaller blocks: glibc's `malloc_trim(0)` returns every whole free page
of the heap, wherever it lies; `trim_periodically` calls it every `TRIM_INTERVAL_S` seconds (a few
milliseconds each time).

Both do nothing where the C library lacks the call (musl, macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Any

from kuberay.runtime.clock import Clock

TRIM_INTERVAL_S = 60.0
THRESHOLD = 128 * 1024  # glibc's starting value of both thresholds, kept
# mallopt's parameter numbers, from <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _libc_function(name: str) -> Callable[..., Any] | None:
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    function: Callable[..., Any] | None = getattr(ctypes.CDLL(library), name, None)
    return function


def pin_thresholds(threshold: int = THRESHOLD) -> bool:
    """Fixes glibc's mmap and trim thresholds at `threshold` bytes for the life of the process, then trims
    the heap; False where the C library has no `mallopt` or refuses a value."""
    mallopt, trim = _libc_function("mallopt"), _libc_function("malloc_trim")
    if mallopt is None or trim is None:
        return False
    pinned = all(mallopt(parameter, threshold) == 1 for parameter in (_M_MMAP_THRESHOLD, _M_TRIM_THRESHOLD))
    trim(0)
    return pinned


async def trim_periodically(clock: Clock, interval: float = TRIM_INTERVAL_S) -> None:
    """Trims the C heap every `interval` seconds until cancelled (returns at once without `malloc_trim`)."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return
    while True:
        await clock.sleep(interval)
        trim(0)
