"""The object store: a log of revisions in SQLite, the live objects in memory, watches fed from both.

After k3s's kine: one table of revisions whose autoincrement row id is the global revision and every
object's resourceVersion. A write appends a row; `UNIQUE(name, prev_revision)` makes a second write on top
of the same revision impossible, so the log can never fork. The live state (the newest row of every key
that is not a deletion) is kept in memory, so reads never touch SQLite; SQLite exists for durability and
for watches that resume from a revision older than the in-memory event window.

Invariants:
- Revisions are strictly increasing across restarts; an acknowledged write has been committed to the
  SQLite write-ahead log (WAL mode). `synchronous=NORMAL` is durable against a crash of this process,
  kill -9 included; only an operating-system crash or power loss could lose the newest commits.
- With `group_commit` (localkube's server), a write changes the live state at once and its row is
  committed with the others of the same turn of the event loop, right after it (`group_commit.py`). Its event
  reaches watchers only once the row is committed, and `settled()` is what a reply waits for before it
  leaves: what a client or watcher sees is durable. Controllers in the process may read a write before
  it is; they are level-triggered, and a restart reads SQLite again.
- Every stored object carries `metadata.resourceVersion` equal to the revision that wrote it; a deletion
  event carries the object's last state with the deletion's revision.
- `watch(prefix, from_rv)` yields every event under `prefix` with revision > `from_rv`, in revision
  order, with no gap and no duplicate between the backlog and the live stream. A `from_rv` older than
  the compacted revision raises `Compacted` (HTTP 410 Gone).
- What reads and writes return is the caller's alone: `get`, `list` and `delete` return fresh copies;
  `create` and `update` return the object they were given (a top level and metadata of their own over its
  values) carrying its resourceVersion, and their events are decoded from the stored bytes. So a caller
  may change either without changing what is stored or what watchers see. An event's object is decoded
  once and shared by all its watchers (the controllers in the process, every watch request), who treat it
  as read-only: freezing it (`kubesemantics.frozen`) would cost four times the decode, on every write.
- `replace` is the exception, for speed: its event is built from the object it is given, sharing its
  nested values, so its caller must not change that object afterwards (see `replace`).
- No stored value is larger than `max_value_bytes` (1.5 MiB by default, etcd's `--max-request-bytes`):
  a bigger create or update raises `TooLarge` and writes nothing.
- A write the disk has no room for raises `SpaceExceeded` and changes nothing, in SQLite or in memory
  (every commit is one autocommitted statement, or a transaction rolled back whole); reads go on, and
  writes succeed again once space is freed. With `group_commit`, a refused commit undoes in memory
  every write it held (none was seen outside the process), newest first, and `settled()` raises
  `SpaceExceeded` in every task (request) that made one of them.

Not thread-safe: use a Store from one thread (localkube's event loop). Its methods are synchronous and
fast except `watch`, which is an async iterator.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import contextlib
import contextvars
import logging
import os
import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from localkube.storage.errors import (
    AlreadyExists,
    Compacted,
    Conflict,
    NotFound,
    SpaceExceeded,
    TooLarge,
    WatchOverflow,
)
from localkube.storage.group_commit import GroupCommit, Row, insert

log = logging.getLogger(__name__)

# The newest revision the current task (a request) wrote with group commit: what its `settled()` answers for.
_written_here: contextvars.ContextVar[int] = contextvars.ContextVar("written_here", default=0)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]

# Events kept in memory for watch resumes; older resumes (newer than the compacted revision) read SQLite.
DEFAULT_WINDOW = 4096
# A watcher this far behind the writers is dropped; it resumes from its last revision, as with a real
# API server that closes slow watchers.
DEFAULT_MAX_PENDING = 100_000
# etcd's default request limit, which bounds the objects a real API server can store.
MAX_VALUE_BYTES = 1536 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kine (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value BLOB NOT NULL,
    old_value BLOB
);
CREATE UNIQUE INDEX IF NOT EXISTS kine_name_prev_revision_uindex ON kine (name, prev_revision);
CREATE INDEX IF NOT EXISTS kine_name_id_index ON kine (name, id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


@dataclass(slots=True)
class Event:
    type: EventType
    key: str
    revision: int
    value: bytes
    _object: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def object(self) -> dict[str, Any]:
        """The object as of this event, decoded once and shared between watchers: treat it as read-only."""
        if self._object is None:
            self._object = _decode(self.value)
        return self._object


@dataclass(slots=True)
class _Live:
    revision: int
    create_revision: int
    value: bytes


@dataclass(slots=True)
class _Unflushed:
    """A write not yet committed, with what undoes it: its key's live state and tombstone before it."""

    event: Event
    previous: _Live | None
    tombstone: int | None


class Watch:
    """An async iterator over the events under one prefix; `close()` ends it."""

    def __init__(
        self,
        unsubscribe: Callable[[Watch], None],
        prefix: str,
        from_rv: int,
        backlog: list[Event],
        max_pending: int,
    ) -> None:
        self._unsubscribe = unsubscribe
        self.prefix = prefix
        # A write made before the watch began but committed after it is published after it: skipped.
        self._from_rv = from_rv
        self._pending: deque[Event] = deque(backlog)
        self._wakeup = asyncio.Event()
        self._closed = False
        self._overflowed = False
        self._max_pending = max_pending
        if backlog:
            self._wakeup.set()

    def deliver(self, event: Event) -> None:
        if self._closed or event.revision <= self._from_rv:
            return
        if len(self._pending) >= self._max_pending:
            self._overflowed = True
            self._closed = True
            self._unsubscribe(self)
        else:
            self._pending.append(event)
        self._wakeup.set()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._unsubscribe(self)
            self._wakeup.set()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._overflowed:
                raise WatchOverflow(
                    f"watch on {self.prefix} fell more than {self._max_pending} events behind"
                )
            if self._closed:
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()


class Store:
    """Durable key → JSON-object store with a global revision and watches. See the module docstring."""

    def __init__(
        self,
        path: Path,
        *,
        window: int = DEFAULT_WINDOW,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_value_bytes: int = MAX_VALUE_BYTES,
        group_commit: bool = False,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The database holds Secrets: its owner alone may read it. SQLite makes its -wal and -shm files
        # with the database file's mode, so they follow.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        for existing in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if existing.exists():
                existing.chmod(0o600)
        self._path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._window: deque[Event] = deque(maxlen=window)
        self._max_pending = max_pending
        self._max_value_bytes = max_value_bytes
        self._watches: set[Watch] = set()
        self._live: dict[str, _Live] = {}
        self._keys: list[str] = []
        # key -> the revision of its deletion, while that row is not compacted: a key created again names
        # that row as the one it follows.
        self._tombstones: dict[str, int] = {}
        self._group_commit = group_commit
        self._writer: GroupCommit | None = None
        self._unflushed: deque[_Unflushed] = deque()
        # (the revision waited for, the newest one the waiting task wrote, its future)
        self._waiters: deque[tuple[int, int, asyncio.Future[None]]] = deque()
        # Recently undone revisions, first to last, and why: a task may ask after the fact.
        self._undone: deque[tuple[int, int, Exception]] = deque(maxlen=64)
        row = self._db.execute("SELECT value FROM meta WHERE key = 'compact_revision'").fetchone()
        self._compact_revision: int = row[0] if row else 0
        row = self._db.execute("SELECT MAX(id) FROM kine").fetchone()
        self._revision: int = row[0] or 0
        self._durable_revision = self._revision
        self._load_live()

    def _load_live(self) -> None:
        rows = self._db.execute(
            "SELECT k.name, k.id, k.create_revision, k.deleted, k.value FROM kine k"
            " JOIN (SELECT name, MAX(id) AS id FROM kine GROUP BY name) newest ON k.id = newest.id"
        )
        for name, revision, create_revision, deleted, value in rows:
            if deleted:
                self._tombstones[name] = revision
            else:
                self._live[name] = _Live(revision, create_revision, value)
        self._keys = sorted(self._live)

    # -- reads ------------------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The newest revision written (0 for an empty store)."""
        return self._revision

    @property
    def durable_revision(self) -> int:
        """The newest revision committed: what a bookmark may name."""
        return self._durable_revision

    @property
    def compact_revision(self) -> int:
        """Watches and history reads must start after this revision."""
        return self._compact_revision

    def get(self, key: str) -> dict[str, Any] | None:
        live = self._live.get(key)
        return None if live is None else _decode(live.value)

    def list(
        self, prefix: str, *, start_after: str | None = None, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """Live objects whose key starts with `prefix`, sorted by key, and the revision they reflect.

        `start_after` and `limit` page through the keys (`limit` None or 0 means all)."""
        return [_decode(self._live[key].value) for key in self.keys(prefix, start_after, limit)], (
            self._revision
        )

    def keys(
        self, prefix: str, start_after: str | None = None, limit: int | None = None
    ) -> builtins.list[str]:
        """The live keys under `prefix`, sorted, optionally after `start_after` and at most `limit`."""
        lo = bisect.bisect_left(self._keys, prefix)
        if start_after is not None and start_after >= prefix:
            lo = max(lo, bisect.bisect_right(self._keys, start_after))
        out: builtins.list[str] = []
        for key in self._iter_from(lo):
            if not key.startswith(prefix) or (limit and len(out) >= limit):
                break
            out.append(key)
        return out

    def _iter_from(self, index: int) -> Iterator[str]:
        keys = self._keys
        for i in range(index, len(keys)):
            yield keys[i]

    def count(self, prefix: str) -> int:
        lo = bisect.bisect_left(self._keys, prefix)
        hi = bisect.bisect_left(self._keys, prefix + "\U0010ffff")
        return hi - lo

    # -- writes -----------------------------------------------------------------------------------------

    def create(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Stores a new object and returns it as stored; raises AlreadyExists if the key is live.

        What `create` and `update` return is `obj` carrying its resourceVersion: a top level and metadata of
        its own over `obj`'s values, so it is the caller's, as `obj` was, to change or not. The write's
        event, which every watcher shares, is decoded from the stored bytes instead (once, by its first
        reader), so nothing the caller holds is in it: one decode per write, where returning the decoded
        bytes and building the event of `obj` would leave the caller's `obj` in what watchers read."""
        if key in self._live:
            raise AlreadyExists(key)
        revision = self._revision + 1
        stamped = _stamp(obj, revision)
        value = self._sized(key, orjson.dumps(stamped))
        row = (revision, key, 1, 0, revision, self._tombstones.get(key, 0), value)
        self._write(row, Event("ADDED", key, revision, value), _Live(revision, revision, value), None)
        return stamped

    def update(self, key: str, obj: dict[str, Any], expected_rv: int | None = None) -> dict[str, Any]:
        """Replaces a live object; with `expected_rv`, only if it is still the current revision. Returns it
        as stored (see `create`)."""
        return self._modify(key, obj, expected_rv, event_of_obj=False)

    def replace(self, key: str, obj: dict[str, Any], expected_rv: int | None = None) -> int:
        """As `update`, returning only the revision written: the writes of the scheduler and the simulated
        kubelet, which build `obj` anew for each (a new top level over a fresh read) and never read it back.
        Its event is made of `obj` rather than decoded again (decoding every write's event was a tenth of
        localkube's CPU in the replay), so it shares `obj`'s values: the caller must not change `obj`
        afterwards."""
        self._modify(key, obj, expected_rv, event_of_obj=True)
        return self._revision

    def _modify(
        self, key: str, obj: dict[str, Any], expected_rv: int | None, *, event_of_obj: bool
    ) -> dict[str, Any]:
        live = self._require(key, expected_rv)
        revision = self._revision + 1
        stamped = _stamp(obj, revision)
        value = self._sized(key, orjson.dumps(stamped))
        row = (revision, key, 0, 0, live.create_revision, live.revision, value)
        event = Event("MODIFIED", key, revision, value, stamped if event_of_obj else None)
        self._write(row, event, _Live(revision, live.create_revision, value), live)
        return stamped

    def delete(self, key: str, expected_rv: int | None = None) -> dict[str, Any]:
        """Removes a live object; returns its last state carrying the deletion's revision."""
        live = self._require(key, expected_rv)
        revision = self._revision + 1
        stamped = _stamp(_decode(live.value), revision)
        value = orjson.dumps(stamped)
        row = (revision, key, 0, 1, live.create_revision, live.revision, value)
        self._write(row, Event("DELETED", key, revision, value, stamped), None, live)
        return _decode(value)

    def _sized(self, key: str, value: bytes) -> bytes:
        if len(value) > self._max_value_bytes:
            raise TooLarge(key, len(value), self._max_value_bytes)
        return value

    def _require(self, key: str, expected_rv: int | None) -> _Live:
        live = self._live.get(key)
        if live is None:
            raise NotFound(key)
        if expected_rv is not None and expected_rv != live.revision:
            raise Conflict(key, expected_rv, live.revision)
        return live

    def _write(self, row: Row, event: Event, live: _Live | None, previous: _Live | None) -> None:
        """Records a write of `event.key` (now `live`, None once deleted; `previous` before it)."""
        writer = self._writer or self._start_writer()
        if writer is None:
            with self._space():
                insert(self._db, [row])
            self._durable_revision = event.revision
        self._revision = event.revision
        self._set_live(event.key, live)
        tombstone = self._tombstones.pop(event.key, None)
        if live is None:
            self._tombstones[event.key] = event.revision
        if writer is None:
            self._publish(event)
        else:
            self._unflushed.append(_Unflushed(event, previous, tombstone))
            _written_here.set(event.revision)
            writer.append(row)

    def _start_writer(self) -> GroupCommit | None:
        """The group commit, from the first write made on a running event loop; None (commit here and
        now) without `group_commit` or outside a loop (before localkube serves)."""
        if not self._group_commit:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        self._writer = GroupCommit(self._db, loop, self._committed)
        return self._writer

    def _set_live(self, key: str, live: _Live | None) -> None:
        if live is None:
            if self._live.pop(key, None) is not None:
                del self._keys[bisect.bisect_left(self._keys, key)]
            return
        if key not in self._live:
            bisect.insort(self._keys, key)
        self._live[key] = live

    def _committed(self, revision: int, refused: sqlite3.Error | None) -> None:
        """Every row up to `revision` is durable, or the commit that held them all was refused."""
        if refused is None:
            self._durable_revision = revision
            while self._unflushed and self._unflushed[0].event.revision <= revision:
                self._publish(self._unflushed.popleft().event)
            while self._waiters and self._waiters[0][0] <= revision:
                waiter = self._waiters.popleft()[2]
                if not waiter.done():
                    waiter.set_result(None)
            return
        error: Exception = refused
        if refused.sqlite_errorcode == sqlite3.SQLITE_FULL:
            error = SpaceExceeded(self._path, refused)
        log.error("undoing %d writes SQLite refused: %s", len(self._unflushed), error)
        first, last = self._unflushed[0].event.revision, self._unflushed[-1].event.revision
        self._undone.append((first, last, error))
        while self._unflushed:
            undone = self._unflushed.pop()
            key = undone.event.key
            self._set_live(key, undone.previous)
            self._tombstones.pop(key, None)
            if undone.tombstone is not None:
                self._tombstones[key] = undone.tombstone
        # Nothing is pending now: a waiter whose own writes were not undone waited for durable ones.
        for _, written, waiter in self._waiters:
            if waiter.done():
                continue
            if first <= written <= last:
                waiter.set_exception(error)
            else:
                waiter.set_result(None)
        self._waiters.clear()

    async def settled(self) -> None:
        """Returns once every write made so far is durable (at once without group commit). Raises what
        refused them (`SpaceExceeded` for a full disk) if one that this task made was undone instead."""
        written = _written_here.get()
        for first, last, error in self._undone:
            if first <= written <= last:
                raise error
        if not self._unflushed:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((self._revision, written, waiter))
        await waiter

    # -- watches ----------------------------------------------------------------------------------------

    def watch(self, prefix: str, from_rv: int) -> Watch:
        """Events under `prefix` with revision > `from_rv`: the history first, then live ones."""
        if from_rv < self._compact_revision:
            raise Compacted(from_rv, self._compact_revision)
        watch = Watch(self._unsubscribe, prefix, from_rv, self._history(prefix, from_rv), self._max_pending)
        self._watches.add(watch)
        return watch

    def _history(self, prefix: str, from_rv: int) -> builtins.list[Event]:
        if from_rv >= self._durable_revision:
            return []
        if self._window and self._window[0].revision <= from_rv + 1:
            return [e for e in self._window if e.revision > from_rv and e.key.startswith(prefix)]
        rows = self._db.execute(
            "SELECT id, name, created, deleted, value FROM kine"
            " WHERE id > ? AND id <= ? AND name >= ? AND name < ? ORDER BY id",
            (from_rv, self._durable_revision, prefix, prefix + "\U0010ffff"),
        )
        return [
            Event(_event_type(created, deleted), name, rev, value)
            for rev, name, created, deleted, value in rows
        ]

    def _publish(self, event: Event) -> None:
        # The window keeps the bytes alone: a resume is rare, and thousands of decoded objects kept for it
        # were most of what the cyclic garbage collector walked on each full collection.
        self._window.append(Event(event.type, event.key, event.revision, event.value))
        for watch in list(self._watches):
            if event.key.startswith(watch.prefix):
                watch.deliver(event)

    def _unsubscribe(self, watch: Watch) -> None:
        self._watches.discard(watch)

    # -- maintenance ------------------------------------------------------------------------------------

    def compact(self, keep_last: int) -> int:
        """Forgets history older than the newest `keep_last` revisions; returns the compacted revision.

        Rows that are still some key's live state are kept whatever their age. Watches and resumes from a
        revision at or before the compacted one get `Compacted` (410 Gone)."""
        target = max(self._compact_revision, self._durable_revision - max(keep_last, 0))
        if target <= self._compact_revision:
            return self._compact_revision
        with self._transaction():
            # A row is history once a newer row of its key exists at or below the target; a deletion
            # row at or below the target is history too (the key is gone). Every row names the row of
            # its key it follows (prev_revision), and what the rows up to the last target made history is
            # gone already: so the rows written since then name all that is new history, and a compaction
            # costs what was written since the last one, not what the store holds.
            self._db.execute(
                "DELETE FROM kine WHERE id IN (SELECT prev_revision FROM kine WHERE id > ? AND id <= ?)"
                " OR (deleted = 1 AND id > ? AND id <= ?)",
                (self._compact_revision, target, self._compact_revision, target),
            )
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('compact_revision', ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (target,),
            )
        self._compact_revision = target
        # The deletion rows up to the target are gone, and every row they followed.
        self._tombstones = {key: rev for key, rev in self._tombstones.items() if rev > target}
        return target

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._space():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                # SQLite may have rolled back already (it does on a full disk); then there is nothing to undo.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _space(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as e:
            if e.sqlite_errorcode == sqlite3.SQLITE_FULL:
                raise SpaceExceeded(self._path, e) from e
            raise

    def close(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._writer = None
        for watch in list(self._watches):
            watch.close()
        self._db.close()


def _event_type(created: int, deleted: int) -> EventType:
    if deleted:
        return "DELETED"
    return "ADDED" if created else "MODIFIED"


def _decode(value: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(value)
    return obj


def _stamp(obj: dict[str, Any], revision: int) -> dict[str, Any]:
    """`obj` carrying `revision` as its resourceVersion (a new top level and metadata; the rest shared)."""
    metadata = obj.get("metadata")
    stamped = dict(obj)
    stamped["metadata"] = {
        **(metadata if isinstance(metadata, dict) else {}),
        "resourceVersion": str(revision),
    }
    return stamped
