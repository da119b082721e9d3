"""Stored log files as Ray's log API serves them: listed by component (Ray's categories), read whole in
chunks or as their last N lines. Reads go to storage by byte ranges, so answering the tail of a large file
costs the tail, not the file, and nothing of a log stays in the server's memory."""

from __future__ import annotations

import asyncio
import fnmatch
from collections import defaultdict
from collections.abc import AsyncIterator

from kuberay.history.storage import Storage

CHUNK = 256 * 1024


# Ray's dashboard's rules (`/api/v0/logs`), first match wins: (a part of the name, its ending, the category).
_CATEGORIES = (
    ("worker", ".out", "worker_out"),
    ("worker", ".err", "worker_err"),
    ("core-worker", ".log", "core_worker"),
    ("core-driver", ".log", "driver"),
    ("raylet.", "", "raylet"),
    ("gcs_server.", "", "gcs_server"),
    ("log_monitor", "", "internal"),
    ("monitor", "", "autoscaler"),
    ("agent.", "", "agent"),
    ("dashboard.", "", "dashboard"),
)


def categorize(files: list[str]) -> dict[str, list[str]]:
    """Files by component, with the names and rules of Ray's dashboard (`/api/v0/logs`)."""
    result: dict[str, list[str]] = defaultdict(list)
    for name in files:
        found = next((c for part, end, c in _CATEGORIES if part in name and name.endswith(end)), "internal")
        result[found].append(name)
    return dict(result)


def matching(files: list[str], glob: str) -> list[str]:
    return [f for f in files if fnmatch.fnmatch(f, glob)]


def tail_start(storage: Storage, key: str, size: int, lines: int) -> int:
    """The offset where the last `lines` lines of the object begin, found by reading backwards."""
    end = size
    wanted = lines + 1 if size and storage.read_range(key, size - 1, 1) == b"\n" else lines
    while end > 0:
        start = max(0, end - CHUNK)
        block = storage.read_range(key, start, end - start)
        count = block.count(b"\n")
        if count >= wanted:
            cut = len(block)
            for _ in range(wanted):
                cut = block.rindex(b"\n", 0, cut)
            return start + cut + 1
        wanted -= count
        end = start
    return 0


async def stream(storage: Storage, key: str, start: int, end: int) -> AsyncIterator[bytes]:
    """The bytes [start, end) of an object, in chunks."""
    offset = start
    while offset < end:
        block = await asyncio.to_thread(storage.read_range, key, offset, min(CHUNK, end - offset))
        if not block:
            return
        offset += len(block)
        yield block
