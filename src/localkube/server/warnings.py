"""Warnings for the reply to the request being served (its `Warning` headers), recorded from deep in the
write path as the API server's `warning.AddWarning(ctx, ...)` records them: one list per request, held in a
context variable that `recording()` sets around the request's work. Outside `recording()`, `add` drops the
text (a write made by localkube's own controllers has no reply to carry it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_CURRENT: ContextVar[list[str] | None] = ContextVar("localkube_warnings", default=None)


def add(text: str) -> None:
    recorded = _CURRENT.get()
    if recorded is not None and text not in recorded:
        recorded.append(text)


@contextmanager
def recording() -> Iterator[list[str]]:
    recorded: list[str] = []
    token = _CURRENT.set(recorded)
    try:
        yield recorded
    finally:
        _CURRENT.reset(token)
