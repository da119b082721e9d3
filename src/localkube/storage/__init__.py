"""localkube's storage: a SQLite revision log (kine's design) with the live state in memory and watches."""

from localkube.storage.store import (
    AlreadyExists,
    Compacted,
    Conflict,
    Event,
    NotFound,
    SpaceExceeded,
    Store,
    StoreError,
    TooLarge,
    Watch,
    WatchOverflow,
)

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
