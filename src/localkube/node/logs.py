"""Container logs: written as the kubelet's container runtime writes them, read as `pods/log` serves them.

Layout (the kubelet's /var/log/pods): `<data-dir>/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log`,
one file per run of a container, numbered by its restart count. Each line is in the CRI log format,
`<RFC 3339 nano timestamp> <stdout|stderr> <F|P> <content>`: F ends a line, P is a partial line (a chunk
of a line that did not end yet; the next entry continues it).

Writing (`LogWriter`): the container's stdout and stderr are pipes read by the event loop (`add_reader`),
never blocking it; a line is written when it ends, when its buffer fills (as a P entry), or at the end of
the stream. Reading is pure file reading: `read_log` returns what `kubectl logs` shows (content only, or
with each line's timestamp), `follow_log` then keeps yielding lines as they are written, until the run is
superseded by a newer one, its pod's logs are removed, or the caller's `stop()` says so.
"""

from __future__ import annotations

import asyncio
import datetime
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, BinaryIO

from localkube.node.errors import NodeError

# A line longer than this is written in parts (P entries), as container runtimes do.
MAX_LINE = 16 * 1024
FOLLOW_INTERVAL = 0.2


class LogNotFound(NodeError, LookupError):
    """There is no log for the container (or no previous run of it); the message is the kubelet's."""


def pod_log_dir(root: Path, namespace: str, pod: str, uid: str) -> Path:
    """The directory of a pod's logs under the data directory `root`."""
    return root / "pods" / f"{namespace}_{pod}_{uid}"


def log_path(root: Path, namespace: str, pod: str, uid: str, container: str, restart: int) -> Path:
    return pod_log_dir(root, namespace, pod, uid) / container / f"{restart}.log"


def _timestamp() -> bytes:
    now = datetime.datetime.now(datetime.UTC)
    return (now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond:06d}000Z").encode()


class LogWriter:
    """Copies a container run's stdout and stderr pipes into its log file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO = path.open("ab")
        self._streams: dict[int, tuple[bytes, IO[bytes], bytearray]] = {}

    @property
    def copying(self) -> bool:
        """True while a pipe is still open."""
        return bool(self._streams)

    def attach(self, stream: str, pipe: IO[bytes]) -> None:
        """Starts copying `pipe` (the read end, owned by this writer from now on) as `stream`."""
        fd = pipe.fileno()
        os.set_blocking(fd, False)
        self._streams[fd] = (stream.encode(), pipe, bytearray())
        asyncio.get_running_loop().add_reader(fd, self._readable, fd)

    def _readable(self, fd: int) -> None:
        self._copy(fd)

    def _copy(self, fd: int) -> bool:
        """Copies what the pipe holds now; at its end, detaches it. True while more may come."""
        stream, pipe, buffer = self._streams[fd]
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if chunk:
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0 or len(buffer) >= MAX_LINE:
                if 0 <= end <= MAX_LINE:
                    self._entry(stream, b"F", bytes(buffer[:end]))
                    del buffer[: end + 1]
                else:
                    self._entry(stream, b"P", bytes(buffer[:MAX_LINE]))
                    del buffer[:MAX_LINE]
            self._file.flush()
            return True
        if buffer:
            self._entry(stream, b"F", bytes(buffer))
        self._detach(fd)
        if self._streams:
            self._file.flush()
        else:
            self._file.close()
        return False

    def _detach(self, fd: int) -> None:
        _, pipe, _ = self._streams.pop(fd)
        asyncio.get_running_loop().remove_reader(fd)
        pipe.close()

    def _entry(self, stream: bytes, tag: bytes, content: bytes) -> None:
        self._file.write(b" ".join((_timestamp(), stream, tag, content)) + b"\n")

    def close(self) -> None:
        """Copies what the pipes hold already, then stops (stray processes may still hold them open)."""
        for fd in list(self._streams):
            while self._copy(fd):
                pass
            if fd in self._streams:
                _, _, buffer = self._streams[fd]
                if buffer:
                    self._entry(self._streams[fd][0], b"F", bytes(buffer))
                self._detach(fd)
        self._file.close()


def _runs(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.stem) for p in directory.glob("*.log") if p.stem.isdigit())


def _chosen_run(root: Path, namespace: str, pod: str, uid: str, container: str, previous: bool) -> Path:
    directory = pod_log_dir(root, namespace, pod, uid) / container
    runs = _runs(directory)
    if previous:
        if len(runs) < 2:
            raise LogNotFound(f'previous terminated container "{container}" in pod "{pod}" not found')
        return directory / f"{runs[-2]}.log"
    if not runs:
        raise LogNotFound(f'container "{container}" in pod "{pod}" is waiting to start: ContainerCreating')
    return directory / f"{runs[-1]}.log"


def _render(entries: list[bytes], timestamps: bool, stream: bytes | None = None) -> bytes:
    """The content of the entries (of one stream only, when `stream` says which)."""
    out = bytearray()
    for entry in entries:
        parts = entry.split(b" ", 3)
        if len(parts) < 3 or (stream is not None and parts[1] != stream):
            continue
        stamp, _, tag = parts[:3]
        content = parts[3] if len(parts) == 4 else b""
        if timestamps:
            out += stamp + b" "
        out += content
        if tag == b"F":
            out += b"\n"
    return bytes(out)


def _tail(entries: list[bytes], lines: int | None) -> list[bytes]:
    """The entries of the last `lines` lines (a line may span several P entries and its final F)."""
    if lines is None:
        return entries
    if lines <= 0:
        return []
    seen = 0
    for index in range(len(entries) - 1, -1, -1):
        if entries[index].split(b" ", 3)[2:3] == [b"F"]:
            seen += 1
            if seen > lines:
                return entries[index + 1 :]
    return entries


def read_log(
    root: Path,
    namespace: str,
    pod: str,
    uid: str,
    container: str,
    *,
    previous: bool = False,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
    timestamps: bool = False,
) -> bytes:
    """What `GET pods/{pod}/log` returns for the container's current run (or the one before it, with
    `previous`); raises LogNotFound with the kubelet's message when there is no such run."""
    path = _chosen_run(root, namespace, pod, uid, container, previous)
    entries = path.read_bytes().splitlines()
    out = _render(_tail(entries, tail_lines), timestamps)
    return out if limit_bytes is None else out[:limit_bytes]


async def follow_log(
    root: Path,
    namespace: str,
    pod: str,
    uid: str,
    container: str,
    *,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
    timestamps: bool = False,
    stop: Callable[[], bool] | None = None,
    interval: float = FOLLOW_INTERVAL,
    stream: str | None = None,
) -> AsyncIterator[bytes]:
    """`read_log` of the current run, then its new lines as they come (see the module docstring); of one
    stream only ("stdout" or "stderr") when `stream` says which (what `kubectl attach` shows)."""
    tag = stream.encode() if stream is not None else None
    path = _chosen_run(root, namespace, pod, uid, container, previous=False)
    budget = limit_bytes
    with path.open("rb") as f:
        data = f.read()
        complete = data[: data.rfind(b"\n") + 1]
        f.seek(len(complete))
        pending = b""
        chunk = _render(_tail(complete.splitlines(), tail_lines), timestamps, tag)
        while True:
            if chunk:
                if budget is not None:
                    chunk = chunk[:budget]
                    budget -= len(chunk)
                yield chunk
                if budget is not None and budget <= 0:
                    return
            data = pending + f.read()
            cut = data.rfind(b"\n") + 1
            pending = data[cut:]
            chunk = _render(data[:cut].splitlines(), timestamps, tag)
            if chunk:
                continue
            runs = _runs(path.parent)
            if not path.exists() or (runs and runs[-1] > int(path.stem)) or (stop is not None and stop()):
                return
            await asyncio.sleep(interval)
