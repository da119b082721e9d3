"""Files only their owner may read: the data directory, its keys, tokens and kubeconfig.

A secret is written to a temporary file created with mode 0600 (never readable by others, not even for
a moment) and renamed into place, so a reader sees the old file or the new one, never half of one.
Directories holding secrets are made, or narrowed, to 0700.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def private_directory(path: Path) -> Path:
    """`path` as a directory only its owner can enter, made if missing (with its parents)."""
    path.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
    path.chmod(DIRECTORY_MODE)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Replaces `path` with `data`, readable and writable by its owner only."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    temporary.replace(path)
