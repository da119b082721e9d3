"""One `kuberay local up` per data directory: its lock, and the state file `status` and `down` read.

The launcher holds an exclusive `flock` on `DIR/local.lock` while it runs and writes its pid into that file,
so a second launcher on the same directory fails at once and can name the holder, without touching the
first one's files. The kernel drops the lock with the process (even on SIGKILL), so a stale file never
blocks. `DIR/local.json` describes the running instance (phase, ports, kubeconfig, logs); it is replaced
atomically and believed only while the lock is held.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

import orjson

from kuberay.local.errors import LocalModeError

LOCK_FILE = "local.lock"
STATE_FILE = "local.json"
# `status` probes the lock with a brief shared lock; a launcher starting at that moment retries this long.
ACQUIRE_RETRY_SECONDS = 1.0


class InstanceError(LocalModeError):
    """The data directory's instance cannot be locked, found or stopped; the message says why."""


class AlreadyRunning(InstanceError):
    def __init__(self, data_dir: Path, pid: int | None) -> None:
        holder = f"process {pid}" if pid else "another process"
        super().__init__(
            f"{data_dir} is in use by kuberay local up ({holder}); "
            f"stop it with `kuberay local down --data-dir {data_dir}` or choose another --data-dir"
        )
        self.pid = pid


@dataclass(frozen=True)
class InstanceState:
    """What `kuberay local status` shows; `phase` is starting, ready or stopping."""

    pid: int
    phase: str
    node_mode: str
    data_dir: str
    kubeconfig: str
    api_server: str = ""
    operator_metrics: str = ""
    operator_health_probe: str = ""
    prometheus: str = ""  # its URL, with --monitoring
    history_server: str = ""  # its URL, with --history
    history_dir: str = ""  # the directory it serves, where collectors write
    children: dict[str, int] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self), option=orjson.OPT_INDENT_2)

    @classmethod
    def from_json(cls, data: bytes) -> InstanceState:
        return cls(**orjson.loads(data))


class InstanceLock:
    """Held by the launcher from before it touches the data directory until after its children are gone."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lock = (self.data_dir / LOCK_FILE).open("a+")
        deadline = time.monotonic() + ACQUIRE_RETRY_SECONDS
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pid = _pid_in(lock)
                    lock.close()
                    raise AlreadyRunning(self.data_dir, pid) from None
                time.sleep(0.05)
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        self._file = lock

    def write(self, state: InstanceState) -> None:
        assert self._file is not None, "not locked"
        partial = self.data_dir / f".{STATE_FILE}.tmp"
        partial.write_bytes(state.to_json())
        partial.replace(self.data_dir / STATE_FILE)

    def release(self) -> None:
        if self._file is None:
            return
        (self.data_dir / STATE_FILE).unlink(missing_ok=True)
        self._file.truncate(0)
        self._file.close()  # closing drops the flock
        self._file = None


def holder(data_dir: Path) -> int | None:
    """The pid of the launcher holding the directory's lock (0 when it has not written it yet), or None
    when no launcher runs there."""
    try:
        lock = (data_dir / LOCK_FILE).open("r")
    except FileNotFoundError:
        return None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _pid_in(lock) or 0
        fcntl.flock(lock, fcntl.LOCK_UN)
        return None


def read_state(data_dir: Path) -> InstanceState | None:
    """The running instance's state, or None when nothing runs on the directory."""
    if holder(data_dir) is None:
        return None
    try:
        return InstanceState.from_json((data_dir / STATE_FILE).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError, TypeError):
        return None  # the launcher holds the lock but has not written its state yet


def stop(data_dir: Path, timeout: float) -> int | None:
    """SIGTERMs the directory's launcher (which stops its children) and waits until it has let go of the
    lock; returns its pid, or None when nothing ran there."""
    pid = holder(data_dir)
    if pid is None:
        return None
    if pid == 0:
        raise InstanceError(f"the process locking {data_dir / LOCK_FILE} has not written its pid yet; retry")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while holder(data_dir) is not None:
        if time.monotonic() > deadline:
            raise InstanceError(f"kuberay local up (process {pid}) did not stop within {timeout:.0f} s")
        time.sleep(0.2)
    return pid


def _pid_in(lock: IO[str]) -> int | None:
    lock.seek(0)
    text = lock.read().strip()
    return int(text) if text.isdigit() else None
