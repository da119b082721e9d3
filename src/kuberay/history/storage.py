"""The storage the collector writes and the server reads: a flat namespace of keys (`a/b/c`) holding
immutable-per-write bytes, as object stores have them.

Invariants every backend keeps: `put` replaces a key's whole value atomically (a reader sees the old bytes
or the new, never a part), and is acknowledged only once durable; `keys` is recursive and sorted. The local
directory backend is the embedded default (`kuberay local up --history`); S3-compatible object storage is
`s3.py`; `backends.from_env` picks one.
"""

from __future__ import annotations

import errno
import os
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path

from kuberay.history.errors import HistoryServerError

STORAGE_BACKEND = "STORAGE_BACKEND"
# The local backend's directory: our own variable (upstream's local backend is a test double).
STORAGE_LOCAL_DIR = "STORAGE_LOCAL_DIR"
# A prefix for every key inside the bucket or directory (upstream's name).
STORAGE_ROOT_DIR = "STORAGE_ROOT_DIR"


class StorageError(HistoryServerError):
    """A backend failed or is misconfigured; the message names the key or the setting."""


class NoSuchKey(StorageError):
    """No object has this key."""


class Storage(ABC):
    """A backend. Methods block (the callers run them in threads)."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Stores `data` under `key`, replacing what was there."""

    @abstractmethod
    def get(self, key: str) -> bytes:
        """The whole value of `key`; NoSuchKey when absent."""

    @abstractmethod
    def read_range(self, key: str, start: int, length: int) -> bytes:
        """`length` bytes from offset `start` (fewer at the end); NoSuchKey when absent."""

    @abstractmethod
    def size(self, key: str) -> int | None:
        """The value's size in bytes, or None when absent."""

    @abstractmethod
    def keys(self, prefix: str) -> list[str]:
        """Every key under the directory `prefix` (recursively), sorted."""

    @abstractmethod
    def sweep(self, prefix: str) -> None:
        """Removes what a writer killed mid-put left under `prefix`. Only the writer of `prefix`, before it
        writes there again, calls this."""

    def list_dirs(self, prefix: str) -> list[str]:
        """The names of the directories right under `prefix`."""
        base = prefix.strip("/") + "/" if prefix.strip("/") else ""
        return sorted(
            {key[len(base) :].split("/", 1)[0] for key in self.keys(prefix) if "/" in key[len(base) :]}
        )


def check_key(key: str) -> str:
    """A key as the backends accept it: relative, `/`-separated, without empty, `.` or `..` segments."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise StorageError(f"invalid storage key {key!r}")
    return key


# What reading a key that no file can be named by raises (a part past NAME_MAX, a NUL): no put stored
# such a key, so a read of it finds nothing, as a read of any other absent key.
_UNNAMEABLE = (FileNotFoundError, IsADirectoryError, NotADirectoryError, ValueError)


def _unnameable(error: OSError | ValueError) -> bool:
    return isinstance(error, _UNNAMEABLE) or (
        isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG
    )


class LocalDirectory(Storage):
    """Keys are files under a directory. A put writes a temporary file beside the target, fsyncs it and
    renames it over the target, so a crash mid-write leaves the old value (and a stray temporary file that
    `keys` ignores). Reads of a key no file can be named by (too long, a NUL) find nothing."""

    _TEMP_PREFIX = ".put-"

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=self._TEMP_PREFIX, dir=path.parent)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except OSError as e:
            raise StorageError(f"cannot store {key!r} under {self.root}: {e}") from e

    def _unread(self, key: str, error: OSError | ValueError) -> StorageError:
        if _unnameable(error):
            return NoSuchKey(key)
        return StorageError(f"cannot read {key!r} under {self.root}: {error}")

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except (OSError, ValueError) as e:
            raise self._unread(key, e) from None

    def read_range(self, key: str, start: int, length: int) -> bytes:
        try:
            with self._path(key).open("rb") as f:
                f.seek(start)
                return f.read(length)
        except (OSError, ValueError) as e:
            raise self._unread(key, e) from None

    def size(self, key: str) -> int | None:
        path = self._path(key)
        try:
            return path.stat().st_size if path.is_file() else None
        except (OSError, ValueError) as e:
            if _unnameable(e):
                return None
            raise self._unread(key, e) from None

    def sweep(self, prefix: str) -> None:
        base = self.root / prefix.strip("/")
        for temporary in base.rglob(self._TEMP_PREFIX + "*") if base.is_dir() else ():
            temporary.unlink(missing_ok=True)

    def keys(self, prefix: str) -> list[str]:
        base = self.root / prefix.strip("/") if prefix.strip("/") else self.root
        try:
            if not base.is_dir():
                return []
        except OSError as e:
            if _unnameable(e):
                return []
            raise StorageError(f"cannot list {prefix!r} under {self.root}: {e}") from e
        keys = [
            path.relative_to(self.root).as_posix()
            for path in base.rglob("*")
            if path.is_file() and not path.name.startswith(self._TEMP_PREFIX)
        ]
        return sorted(keys)
