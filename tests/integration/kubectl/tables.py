"""Reading kubectl-printer tables in tests: cells by the header's column offsets, and a check of the layout
rules themselves (kubectl's tabwriter: each column as wide as its widest cell plus 3, at least 6)."""

from __future__ import annotations

import re


def columns(header: str) -> list[tuple[str, int]]:
    """(name, offset) of each header cell; names hold single spaces, columns are 3+ spaces apart."""
    return [(m.group(0), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]


def parse(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    assert lines, "no table"
    cols = columns(lines[0])
    rows = []
    for line in lines[1:]:
        cells = {}
        for i, (name, start) in enumerate(cols):
            end = cols[i + 1][1] if i + 1 < len(cols) else None
            cells[name] = line[start:end].strip()
        rows.append(cells)
    return rows


def assert_layout(text: str) -> None:
    lines = text.splitlines()
    cols = columns(lines[0])
    for i in range(len(cols) - 1):
        start, following = cols[i][1], cols[i + 1][1]
        widest = max(len(line[start:following].rstrip()) for line in lines)
        assert following - start == max(6, widest + 3), (cols[i][0], lines)
