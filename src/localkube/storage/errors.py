"""The store's errors: `StoreError`, the root of those of `localkube.storage`, and one class per refusal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from localkube.errors import LocalkubeError


class StoreError(LocalkubeError):
    """Base of the store's errors; a refused write names the key it concerns."""


class AlreadyExists(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"{key} already exists")
        self.key = key


class NotFound(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"{key} not found")
        self.key = key


class Conflict(StoreError):
    """The caller's resourceVersion is not the object's current one."""

    def __init__(self, key: str, expected: int, actual: int) -> None:
        super().__init__(f"{key}: resourceVersion {expected} is stale (current {actual})")
        self.key = key
        self.expected = expected
        self.actual = actual


class TooLarge(StoreError):
    """The object would be larger than the store keeps (etcd's own limit, in etcd's words)."""

    def __init__(self, key: str, size: int, limit: int) -> None:
        super().__init__("etcdserver: request is too large")
        self.key = key
        self.size = size
        self.limit = limit


class SpaceExceeded(StoreError):
    """The disk holding the database is full (etcd's "mvcc: database space exceeded", in our case)."""

    def __init__(self, path: Path, cause: sqlite3.Error) -> None:
        super().__init__(
            f"database space exceeded: no space left on the device holding {path} ({cause}); "
            "free space there and retry"
        )
        self.path = path


class Compacted(StoreError):
    """The requested revision is older than the history the store keeps."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"revision {requested} has been compacted (oldest available: {compacted + 1})")
        self.requested = requested
        self.compacted = compacted


class WatchOverflow(StoreError):
    """The watcher fell too far behind and was dropped; resume from the last revision seen."""
