"""The store with `group_commit` (localkube's server): the rows of one turn of the event loop, one commit.

What a client or watcher sees must be durable: an event is published once its row is committed, and
`settled()` is what a reply waits for. A commit SQLite refuses undoes, in memory, every write not yet
committed. The refusal here is a real one: another connection took the row id the store was about to
write, so SQLite refuses the INSERT (a full disk, the case it stands for, is the full-disk drill's).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from localkube.storage import Event, Store, Watch


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, **extra}


def _row_ids(path: Path) -> set[int]:
    return {row[0] for row in sqlite3.connect(path).execute("SELECT id FROM kine")}


async def _next(watch: Watch) -> Event:
    return await asyncio.wait_for(anext(watch), 5)


async def test_an_event_is_published_once_its_row_is_committed(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", group_commit=True)
    watch = store.watch("/pods/", 0)
    store.create("/pods/a", _pod("a"))
    store.update("/pods/a", _pod("a", spec={"v": 2}))
    # The live state has both writes at once; a watcher has neither until they are committed.
    assert store.get("/pods/a")["spec"] == {"v": 2}  # type: ignore[index]
    assert (store.revision, store.durable_revision) == (2, 0)
    assert not watch._pending
    await asyncio.wait_for(store.settled(), 5)
    assert store.durable_revision == 2
    assert _row_ids(tmp_path / "db") == {1, 2}
    assert [(e.type, e.revision) for e in (await _next(watch), await _next(watch))] == [
        ("ADDED", 1),
        ("MODIFIED", 2),
    ]
    store.close()
    assert Store(tmp_path / "db").get("/pods/a")["spec"] == {"v": 2}  # type: ignore[index]


async def test_a_refused_commit_undoes_every_write_not_yet_committed(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", group_commit=True)
    store.create("/pods/kept", _pod("kept"))
    store.create("/pods/gone", _pod("gone"))
    await asyncio.wait_for(store.settled(), 5)
    watch = store.watch("/pods/", store.revision)
    # Another writer takes the next row id: the store's next commit is refused by SQLite.
    with sqlite3.connect(tmp_path / "db") as other:
        other.execute(
            "INSERT INTO kine (id, name, created, deleted, create_revision, prev_revision, value)"
            " VALUES (3, '/elsewhere', 1, 0, 3, 0, x'7b7d')"
        )
    store.update("/pods/kept", _pod("kept", spec={"v": 2}))
    store.delete("/pods/gone")
    store.create("/pods/new", _pod("new"))
    with pytest.raises(sqlite3.IntegrityError):
        await asyncio.wait_for(store.settled(), 5)
    # Undone in memory as if never made; no watcher saw any of it.
    assert "spec" not in store.get("/pods/kept")  # type: ignore[operator]
    assert store.get("/pods/gone") is not None
    assert store.get("/pods/new") is None
    assert store.keys("/pods/") == ["/pods/gone", "/pods/kept"]
    assert not watch._pending
    # The next write is committed, after the revisions the undone ones never used.
    written = store.create("/pods/new", _pod("new"))
    await asyncio.wait_for(store.settled(), 5)
    event = await _next(watch)
    assert (event.type, event.key, event.revision) == ("ADDED", "/pods/new", 6)
    assert written["metadata"]["resourceVersion"] == "6"
    store.close()
    reopened = Store(tmp_path / "db")
    assert sorted(reopened.keys("/pods/")) == ["/pods/gone", "/pods/kept", "/pods/new"]
    assert _row_ids(tmp_path / "db") == {1, 2, 3, 6}


async def test_a_key_deleted_compacted_and_created_again_is_written(tmp_path: Path) -> None:
    # A created key names its deletion row as the one it follows while that row is kept; once compaction
    # removed it, the create follows nothing, as the key's first create did.
    store = Store(tmp_path / "db", group_commit=True)
    store.create("/a", _pod("a"))
    store.delete("/a")
    store.create("/a", _pod("a"))
    store.delete("/a")
    store.create("/b", _pod("b"))
    await asyncio.wait_for(store.settled(), 5)
    assert store.compact(keep_last=0) == 5
    store.create("/c", _pod("c"))
    store.create("/a", _pod("a"))
    await asyncio.wait_for(store.settled(), 5)
    rows = sqlite3.connect(tmp_path / "db").execute("SELECT id, name, prev_revision FROM kine").fetchall()
    assert sorted(rows) == [(5, "/b", 0), (6, "/c", 0), (7, "/a", 0)]
    store.close()


async def test_a_watch_from_a_revision_not_yet_committed_gets_only_what_follows_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", group_commit=True)
    store.create("/pods/a", _pod("a"))
    store.create("/pods/b", _pod("b"))
    watch = store.watch("/pods/", store.revision)  # as a controller lists, then watches
    store.create("/pods/c", _pod("c"))
    await asyncio.wait_for(store.settled(), 5)
    event = await _next(watch)
    assert (event.key, event.revision) == ("/pods/c", 3)
    assert not watch._pending
    store.close()


async def test_only_the_tasks_whose_writes_were_undone_are_told(tmp_path: Path) -> None:
    # Each request is a task of its own: one whose write was refused gets the error; one that only waited
    # for what was pending (a read) gets its answer, which then holds only durable writes.
    store = Store(tmp_path / "db", group_commit=True)

    async def write(name: str) -> None:
        store.create(f"/pods/{name}", _pod(name))
        await store.settled()

    await asyncio.wait_for(asyncio.create_task(write("first")), 5)
    with sqlite3.connect(tmp_path / "db") as other:
        other.execute(
            "INSERT INTO kine (id, name, created, deleted, create_revision, prev_revision, value)"
            " VALUES (2, '/elsewhere', 1, 0, 2, 0, x'7b7d')"
        )
    refused = asyncio.create_task(write("refused"))
    reader = asyncio.create_task(store.settled())
    done, _ = await asyncio.wait({refused, reader}, timeout=5)
    assert done == {refused, reader}
    assert isinstance(refused.exception(), sqlite3.IntegrityError)
    assert reader.exception() is None
    assert store.keys("/pods/") == ["/pods/first"]
    store.close()
