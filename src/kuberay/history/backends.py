"""The backend `STORAGE_BACKEND` (upstream's name) names, from the variables the collector's container and
the server get; credentials are read by the backend from there and never logged."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kuberay.history import s3
from kuberay.history.storage import STORAGE_BACKEND, STORAGE_LOCAL_DIR, LocalDirectory, Storage, StorageError


def from_env(env: Mapping[str, str]) -> Storage:
    """The backend `STORAGE_BACKEND` names: `local` (with `STORAGE_LOCAL_DIR`) or `s3` (see `s3.py`)."""
    backend = env.get(STORAGE_BACKEND, "").strip().lower()
    if backend == "local":
        directory = env.get(STORAGE_LOCAL_DIR, "")
        if not directory:
            raise StorageError(f"{STORAGE_LOCAL_DIR} must be set when {STORAGE_BACKEND} is local")
        return LocalDirectory(Path(directory))
    if backend == "s3":
        return s3.S3Storage.from_env(env)
    raise StorageError(f"{STORAGE_BACKEND} must be local or s3, not {backend!r}")
