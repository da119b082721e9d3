import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from localkube.storage import (
    AlreadyExists,
    Compacted,
    Conflict,
    Event,
    NotFound,
    Store,
    TooLarge,
    Watch,
    WatchOverflow,
)


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, **extra}


async def _take(watch: Watch, n: int) -> list[Event]:
    out: list[Event] = []
    async for event in watch:
        out.append(event)
        if len(out) == n:
            break
    return out


def test_revisions_are_resource_versions_and_strictly_increase(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    a = store.create("/pods/default/a", _pod("a"))
    b = store.create("/pods/default/b", _pod("b"))
    a2 = store.update("/pods/default/a", {**a, "spec": {"x": 1}})
    assert [int(o["metadata"]["resourceVersion"]) for o in (a, b, a2)] == [1, 2, 3]
    assert store.revision == 3
    assert store.get("/pods/default/a") == a2


def test_create_update_delete_errors(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.create("/k", _pod("a"))
    with pytest.raises(AlreadyExists):
        store.create("/k", _pod("a"))
    with pytest.raises(Conflict) as conflict:
        store.update("/k", _pod("a"), expected_rv=7)
    assert (conflict.value.expected, conflict.value.actual) == (7, 1)
    with pytest.raises(NotFound):
        store.update("/missing", _pod("m"))
    deleted = store.delete("/k", expected_rv=1)
    assert deleted["metadata"]["resourceVersion"] == "2"
    assert store.get("/k") is None
    assert store.create("/k", _pod("a"))["metadata"]["resourceVersion"] == "3"


async def test_replace_writes_as_update_does_and_returns_the_revision_it_wrote(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.create("/pods/default/a", _pod("a"))
    watch = store.watch("/pods/", 1)
    assert store.replace("/pods/default/a", _pod("a", spec={"x": 1}), expected_rv=1) == 2
    with pytest.raises(Conflict):
        store.replace("/pods/default/a", _pod("a", spec={"x": 2}), expected_rv=1)
    with pytest.raises(NotFound):
        store.replace("/pods/default/missing", _pod("missing"))
    assert store.get("/pods/default/a") == _pod("a", spec={"x": 1}) | {
        "metadata": {"name": "a", "namespace": "default", "resourceVersion": "2"}
    }
    [event] = await asyncio.wait_for(_take(watch, 1), 5)
    assert (event.type, event.revision, event.object["spec"]) == ("MODIFIED", 2, {"x": 1})
    written = store.get("/pods/default/a")
    store.close()
    assert Store(tmp_path / "db").get("/pods/default/a") == written


def test_reads_are_copies(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.create("/k", _pod("a", spec={"containers": [{"name": "c"}]}))
    store.get("/k")["metadata"]["name"] = "changed"  # type: ignore[index]
    store.get("/k")["spec"]["containers"][0]["name"] = "changed"  # type: ignore[index]
    listed, _ = store.list("/")
    listed[0]["spec"]["containers"].append({"name": "extra"})
    assert store.get("/k") == store.list("/")[0][0]
    assert store.get("/k")["metadata"]["name"] == "a"  # type: ignore[index]
    assert store.get("/k")["spec"] == {"containers": [{"name": "c"}]}  # type: ignore[index]


@pytest.mark.parametrize("group_commit", [False, True], ids=["commit-each", "group-commit"])
async def test_what_a_write_returns_and_what_it_was_given_are_not_what_its_watchers_see(
    tmp_path: Path, group_commit: bool
) -> None:
    """A writer that changes the object create or update returned, or the one it passed in, changes neither
    the write's event (shared by every watcher: the controllers in the process, every watch request) nor the
    stored object."""
    store = Store(tmp_path / "db", group_commit=group_commit)
    watch = store.watch("/pods/", 0)
    given = _pod("a", spec={"containers": [{"name": "c", "args": ["x"]}]})
    given["metadata"]["labels"] = {"app": "a"}
    created = store.create("/pods/a", given)
    created["spec"]["containers"][0]["args"].append("from-the-return")
    created["metadata"]["labels"]["app"] = "from-the-return"
    given["spec"]["containers"][0]["name"] = "from-the-input"
    given["metadata"]["labels"]["extra"] = "from-the-input"
    change = store.get("/pods/a")
    assert change is not None
    change["spec"]["containers"][0]["args"] = ["y"]
    updated = store.update("/pods/a", change)
    updated["spec"]["containers"][0]["args"].append("from-the-return")
    change["spec"]["containers"][0]["args"].append("from-the-input")
    await store.settled()
    added, modified = await asyncio.wait_for(_take(watch, 2), 5)
    assert added.object["spec"] == {"containers": [{"name": "c", "args": ["x"]}]}
    assert added.object["metadata"]["labels"] == {"app": "a"}
    assert modified.object["spec"] == {"containers": [{"name": "c", "args": ["y"]}]}
    assert store.get("/pods/a") == modified.object
    assert (added.object["metadata"]["resourceVersion"], modified.object["metadata"]["resourceVersion"]) == (
        "1",
        "2",
    )
    watch.close()
    store.close()


def test_list_by_prefix_with_pages(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    for ns, name in [("b", "x"), ("a", "z"), ("a", "y"), ("ab", "w")]:
        store.create(f"/pods/{ns}/{name}", _pod(name))
    names = [o["metadata"]["name"] for o in store.list("/pods/a/")[0]]
    assert names == ["y", "z"]
    assert store.keys("/pods/", limit=2) == ["/pods/a/y", "/pods/a/z"]
    assert store.keys("/pods/", start_after="/pods/a/z", limit=2) == ["/pods/ab/w", "/pods/b/x"]
    assert store.count("/pods/a/") == 2


def test_restart_keeps_every_write_and_resumes_revisions(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.create("/a", _pod("a"))
    store.create("/b", _pod("b"))
    store.delete("/a")
    store.close()
    reopened = Store(tmp_path / "db")
    assert reopened.get("/a") is None
    assert reopened.get("/b") is not None
    assert reopened.revision == 3
    assert reopened.create("/c", _pod("c"))["metadata"]["resourceVersion"] == "4"


async def test_watch_replays_history_then_streams_live_without_gaps(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.create("/pods/a", _pod("a"))
    store.create("/svc/s", _pod("s"))
    store.update("/pods/a", _pod("a", spec={"v": 2}))
    watch = store.watch("/pods/", 1)
    store.delete("/pods/a")
    store.create("/pods/b", _pod("b"))
    events = await asyncio.wait_for(_take(watch, 3), 5)
    assert [(e.type, e.key, e.revision) for e in events] == [
        ("MODIFIED", "/pods/a", 3),
        ("DELETED", "/pods/a", 4),
        ("ADDED", "/pods/b", 5),
    ]
    assert events[1].object["spec"] == {"v": 2}
    watch.close()


async def test_watch_resumes_from_sqlite_after_restart(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    for i in range(5):
        store.create(f"/pods/{i}", _pod(str(i)))
    store.close()
    reopened = Store(tmp_path / "db")
    events = await asyncio.wait_for(_take(reopened.watch("/pods/", 3), 2), 5)
    assert [e.key for e in events] == ["/pods/3", "/pods/4"]


async def test_compaction_makes_old_resumes_gone_but_keeps_live_objects(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", window=2)
    store.create("/a", _pod("a"))
    for i in range(5):
        store.update("/a", _pod("a", spec={"i": i}))
    store.create("/b", _pod("b"))
    assert store.compact(keep_last=2) == 5
    with pytest.raises(Compacted):
        store.watch("/", 4)
    events = await asyncio.wait_for(_take(store.watch("/", 5), 2), 5)
    assert [e.revision for e in events] == [6, 7]
    store.close()
    reopened = Store(tmp_path / "db")
    assert reopened.get("/a")["spec"] == {"i": 4}  # type: ignore[index]
    with pytest.raises(Compacted):
        reopened.watch("/", 1)


def test_each_compaction_leaves_exactly_the_rows_newer_than_its_target_and_the_live_ones(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "db")
    written: list[tuple[str, int, bool]] = []  # key, revision, deleted
    rounds = [["/a", "/b", "/c"], ["/a", "/a", "-/b"], ["/b", "/c", "-/a"], ["/a", "/c", "/c"], []]
    for writes in rounds:
        for write in writes:
            key = write.lstrip("-")
            if write.startswith("-"):
                written.append((key, int(store.delete(key)["metadata"]["resourceVersion"]), True))
            elif store.get(key) is None:
                written.append((key, int(store.create(key, _pod(key))["metadata"]["resourceVersion"]), False))
            else:
                written.append((key, int(store.update(key, _pod(key))["metadata"]["resourceVersion"]), False))
        target = store.compact(keep_last=1)
        newest_kept = {key: rev for key, rev, _ in written if rev <= target}
        expected = {
            rev
            for key, rev, deleted in written
            if rev > target or (rev == newest_kept.get(key) and not deleted)
        }
        rows = sqlite3.connect(tmp_path / "db").execute("SELECT id FROM kine").fetchall()
        assert {row[0] for row in rows} == expected
    store.close()


async def test_a_watcher_that_falls_too_far_behind_is_dropped(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", max_pending=3)
    watch = store.watch("/", 0)
    for i in range(5):
        store.create(f"/{i}", _pod(str(i)))
    received = []
    with pytest.raises(WatchOverflow):
        async for event in watch:
            received.append(event.revision)
    assert received == [1, 2, 3]


def test_an_object_over_the_size_limit_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", max_value_bytes=1000)
    small = store.create("/k", _pod("a"))
    with pytest.raises(TooLarge, match="etcdserver: request is too large"):
        store.update("/k", _pod("a", spec={"blob": "x" * 1000}))
    with pytest.raises(TooLarge):
        store.create("/big", _pod("big", spec={"blob": "x" * 1000}))
    assert store.revision == 1
    assert store.get("/k") == small and store.get("/big") is None
    store.close()
    assert Store(tmp_path / "db").revision == 1
