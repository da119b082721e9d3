"""Uploads one node's Ray logs directory, file by file, to `<node>/logs/<path>`.

A file is uploaded when its size differs from what storage holds; objects cannot be appended to, so a grown
file is stored again whole (a put replaces the object atomically). What storage holds is the truth: the
first time a file is seen after a (re)start its stored size is asked for, so a collector killed mid-upload
and started again uploads each file once more at most and never twice the same bytes into one object.
Ray's rotated files (`worker-....out.1`) are files of their own and keep their contents; a file that shrank
(rotated in place) is stored again from its new start.
"""

from __future__ import annotations

import logging
import posixpath
from pathlib import Path

from kuberay.history.storage import Storage

log = logging.getLogger("kuberay.history.collector")


class LogSync:
    """Not thread-safe: one `sync` at a time (the collector's loop and its final flush take turns)."""

    def __init__(self, storage: Storage, logs_dir: Path, key_base: str) -> None:
        self.storage = storage
        self.logs_dir = logs_dir
        self.key_base = key_base
        self._stored: dict[str, int] = {}  # relative path -> bytes storage holds for it

    def _stored_size(self, rel: str) -> int | None:
        if rel not in self._stored:
            size = self.storage.size(posixpath.join(self.key_base, rel))
            if size is None:
                return None
            self._stored[rel] = size
        return self._stored[rel]

    def sync(self) -> int:
        """Uploads every file whose size changed; returns how many. A file that vanished mid-way (Ray
        removed it) is skipped."""
        if not self.logs_dir.is_dir():
            return 0
        uploaded = 0
        for path in sorted(self.logs_dir.rglob("*")):
            try:
                if not path.is_file():
                    continue
                size = path.stat().st_size
                rel = path.relative_to(self.logs_dir).as_posix()
                if self._stored_size(rel) == size:
                    continue
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            self.storage.put(posixpath.join(self.key_base, rel), data)
            self._stored[rel] = len(data)
            uploaded += 1
        return uploaded
