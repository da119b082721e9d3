"""The uvicorn server both History Server processes run: without uvicorn's own signal handling, because
each process stops on SIGTERM in its own way (the collector flushes first)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn


class Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
