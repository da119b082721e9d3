"""`StoreView`: the reads, writes and watches of `Store` that the in-process controllers and the node agent use.

`Store` implements it in localkube's own process, so its controllers and its node see the objects directly,
with nothing in between. The node agent run against another API server (`localkube agent`) implements it over
HTTP (`localkube.node.remote`), so the same kubelets drive a node there. Keys are the store's
(`/registry/core/pods/<namespace>/<name>`); objects are JSON-shaped dicts to be treated as read-only.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from typing import Any, Protocol

from localkube.storage.store import Event


class EventStream(Protocol):
    """The events under one prefix as an async iterator (it may raise `WatchOverflow`); `close()` ends it."""

    def __aiter__(self) -> AsyncIterator[Event]: ...

    def close(self) -> None: ...


class StoreView(Protocol):
    @property
    def revision(self) -> int:
        """The newest revision seen; a watch from it yields every later change."""
        ...

    def get(self, key: str) -> dict[str, Any] | None: ...

    def list(self, prefix: str) -> tuple[list[dict[str, Any]], int]:
        """Live objects under `prefix`, sorted by key, and the revision they reflect."""
        ...

    def keys(self, prefix: str) -> builtins.list[str]: ...

    def create(self, key: str, obj: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, key: str, obj: dict[str, Any], expected_rv: int | None = None) -> dict[str, Any]:
        """Replaces the object (the node changes only a pod's status); with `expected_rv`, only if that is
        still its revision."""
        ...

    def replace(self, key: str, obj: dict[str, Any], expected_rv: int | None = None) -> int | None:
        """As `update`, without the object back: the revision written, or None where the write is only
        queued and its revision not known yet."""
        ...

    def delete(self, key: str, expected_rv: int | None = None) -> dict[str, Any]: ...

    def watch(self, prefix: str, from_rv: int) -> EventStream: ...
