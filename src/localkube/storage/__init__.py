"""localkube's storage: a SQLite revision log (kine's design) with the live state in memory and watches."""

from localkube.storage.errors import (
    AlreadyExists,
    Compacted,
    Conflict,
    NotFound,
    SpaceExceeded,
    StoreError,
    TooLarge,
    WatchOverflow,
)
from localkube.storage.store import Event, Store, Watch

__all__ = [
    "AlreadyExists",
    "Compacted",
    "Conflict",
    "Event",
    "NotFound",
    "SpaceExceeded",
    "Store",
    "StoreError",
    "TooLarge",
    "Watch",
    "WatchOverflow",
]
