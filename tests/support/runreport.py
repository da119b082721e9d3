"""What a run's output shows beyond pass and fail: a build's time, a fuzzing pass's catalogue, the
differential tier's tally, the RBAC allowances.

Under pytest-xdist a worker's own output is shown nowhere (not even with capture off), so such lines go
through `report()`: each worker hands its lines to the controller as it ends, and the terminal summary
prints them in a section of their own, as a run without workers does (tests/conftest.py).
"""

from __future__ import annotations

LINES: list[str] = []


def report(*lines: str) -> None:
    LINES.extend(lines)
