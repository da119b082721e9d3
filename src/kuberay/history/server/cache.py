"""A least-recently-used cache bounded by the bytes of what it holds, so that the server's memory does not
grow with the number of stored sessions, only with this bound. Sizes are what the loader says an entry
costs (the stored bytes, times a factor for parsed JSON); an entry larger than the whole bound is not kept.
Used from the event loop only (no locking)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


class ByteCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: str, value: Any, size: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        if size > self.max_bytes:
            return
        while self._entries and self.bytes + size > self.max_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted
        self._entries[key] = (value, size)
        self.bytes += size
