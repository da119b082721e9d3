import asyncio
import os
from pathlib import Path

import pytest

from localkube.node.logs import MAX_LINE, LogNotFound, LogWriter, follow_log, log_path, read_log
from support.eventually import eventually

T1, T2, T3 = (
    "2026-01-01T00:00:01.000000001Z",
    "2026-01-01T00:00:02.000000002Z",
    "2026-01-01T00:00:03.000000003Z",
)


def _write(root: Path, restart: int, *entries: str) -> Path:
    path = log_path(root, "ns", "p", "uid", "c", restart)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.writelines(entry + "\n" for entry in entries)
    return path


def _read(root: Path, **options: object) -> bytes:
    return read_log(root, "ns", "p", "uid", "c", **options)  # type: ignore[arg-type]


def test_reading_joins_partial_lines_tails_limits_and_shows_timestamps(tmp_path: Path) -> None:
    _write(tmp_path, 0, f"{T1} stdout F old run")
    _write(tmp_path, 1, f"{T1} stdout F first", f"{T2} stderr P sec", f"{T2} stderr F ond", f"{T3} stdout F ")
    assert _read(tmp_path) == b"first\nsecond\n\n"
    assert _read(tmp_path, tail_lines=2) == b"second\n\n"
    assert _read(tmp_path, tail_lines=0) == b""
    assert _read(tmp_path, limit_bytes=8) == b"first\nse"
    assert _read(tmp_path, timestamps=True, tail_lines=1) == f"{T3} \n".encode()
    assert _read(tmp_path, previous=True) == b"old run\n"


def test_missing_runs_raise_the_kubelets_messages(tmp_path: Path) -> None:
    with pytest.raises(LogNotFound, match='container "c" in pod "p" is waiting to start'):
        _read(tmp_path)
    _write(tmp_path, 0, f"{T1} stdout F only")
    with pytest.raises(LogNotFound, match='previous terminated container "c" in pod "p" not found'):
        _read(tmp_path, previous=True)


async def test_following_yields_new_lines_and_ends_when_the_container_restarts(tmp_path: Path) -> None:
    path = _write(tmp_path, 0, f"{T1} stdout F one", f"{T1} stdout F two")
    stream = follow_log(tmp_path, "ns", "p", "uid", "c", tail_lines=1, interval=0.01)
    assert await anext(stream) == b"two\n"
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    assert not pending.done()
    with path.open("a") as f:
        f.write(f"{T2} stdout F thr")  # not yet a whole entry: nothing is yielded
        f.flush()
        await asyncio.sleep(0.05)
        assert not pending.done()
        f.write("ee\n")
    assert await asyncio.wait_for(pending, 2) == b"three\n"
    _write(tmp_path, 1, f"{T3} stdout F next run")
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(stream), 2)


async def test_the_writer_copies_both_streams_and_splits_long_lines(tmp_path: Path) -> None:
    writer = LogWriter(log_path(tmp_path, "ns", "p", "uid", "c", 0))
    long_line = b"x" * (MAX_LINE + 10)
    for stream, data in (("stdout", b"out\n" + long_line + b"\n"), ("stderr", b"no newline at end")):
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
        writer.attach(stream, os.fdopen(read_end, "rb"))
    await eventually(lambda: not writer.copying, 5, "the copy done", every=0.01)
    assert sorted(_read(tmp_path).splitlines()) == sorted([b"out", long_line, b"no newline at end"])
    entries = log_path(tmp_path, "ns", "p", "uid", "c", 0).read_bytes().splitlines()
    assert [e.split(b" ")[1:3] for e in entries].count([b"stdout", b"P"]) == 1
