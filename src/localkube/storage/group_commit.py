"""The store's SQLite appends, many rows to a commit (group commit).

In localkube's replayed write load the appends were a sixth of the event loop's time, most of it paid
once per commit, not per row: the WAL frames of the pages a row touches (the rows of one moment share
them), the file locks, every thousandth page's checkpoint. So the rows written during one turn of the
event loop are committed together, by one callback after that turn's work: one multi-row INSERT, one
statement, all its rows or none.

A thread of its own was tried first: SQLite's work overlapped the event loop's, but every commit then
waited for the GIL twice, and the replies waiting on it made the replay slower than this (1.21 x the
thread's pods/s, 0.83 x its CPU per pod).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable

Row = tuple[int, str, int, int, int, int, bytes]
# Called with the newest revision of a commit and the error that refused it, or None.
Committed = Callable[[int, sqlite3.Error | None], None]


class GroupCommit:
    """Rows appended during one turn of `loop` are committed together right after it."""

    def __init__(self, db: sqlite3.Connection, loop: asyncio.AbstractEventLoop, committed: Committed) -> None:
        self._db = db
        self._loop = loop
        self._committed = committed
        self._rows: list[Row] = []

    def append(self, row: Row) -> None:
        if not self._rows:
            self._loop.call_soon(self.flush)
        self._rows.append(row)

    def flush(self) -> None:
        """Commits what is pending now (the store's close does not wait for the turn)."""
        rows, self._rows = self._rows, []
        if not rows:
            return
        try:
            insert(self._db, rows)
        except sqlite3.Error as refused:
            self._committed(rows[-1][0], refused)
        else:
            self._committed(rows[-1][0], None)


def insert(db: sqlite3.Connection, rows: list[Row]) -> None:
    """One autocommitted statement: all the rows, or (SQLite undoing it whole) none."""
    placeholders = ",".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(rows))
    # The explicit id keeps the revision written into the object equal to the row id; the autoincrement
    # sequence still advances, so ids are never reused after compaction. `old_value` (kine's previous
    # value, for watches that ask for it) stays empty: nothing here reads it, and writing every object
    # twice made each append ~40 % dearer.
    db.execute(
        "INSERT INTO kine (id, name, created, deleted, create_revision, prev_revision, value)"
        f" VALUES {placeholders}",
        [value for row in rows for value in row],
    )
