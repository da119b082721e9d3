"""What the hostile-input tests check of a refusal, and the catalogue of cases they print.

A refusal names the field when its Status has a `details.causes[].field`, or its message a field path, that
is the aimed-at field, one of its parents or one of its children (a wrong value at `spec.a` may be refused as
`spec.a.b: Required value`). A case that had to create parents to reach its field (`materialized`) may be
refused for one of those instead: any named field then does. A body that does not decode has no fields
yet: its place in the text (line and column) is the name.
"""

from __future__ import annotations

import collections
import re
from typing import Any

from support.runreport import report

_FIELD = re.compile(r"(?:spec|metadata|status|apiVersion|kind)(?:[.\[][^\s:,\"\]]*\]?)*")
_POSITION = re.compile(r"line \d+ column \d+")


def related(named: str, target: str) -> bool:
    """`named` is `target`, an ancestor of it, or a descendant."""

    def under(child: str, parent: str) -> bool:
        return child == parent or child.startswith((parent + ".", parent + "["))

    return bool(named) and (under(named, target) or under(target, named))


def named_fields(status: dict[str, Any]) -> list[str]:
    causes = (status.get("details") or {}).get("causes") or []
    return [c.get("field", "") for c in causes if c.get("field")] + _FIELD.findall(status.get("message", ""))


def names_the_field(status: dict[str, Any], target: str, *, any_field: bool = False) -> bool:
    fields = named_fields(status)
    if any(related(f, target) for f in fields) or (any_field and fields):
        return True
    return status.get("reason") == "BadRequest" and bool(_POSITION.search(status.get("message", "")))


class Catalogue:
    """Counts of (surface, case kind, outcome), reported as a table in the run's output."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def add(self, case: str, outcome: str) -> None:
        self.counts[(case, outcome)] += 1

    def report(self) -> None:
        outcomes = sorted({o for _, o in self.counts})
        cases = sorted({c for c, _ in self.counts})
        width = max(len(c) for c in cases) + 2 if cases else 6
        lines = [f"{self.title}: {sum(self.counts.values())} cases", f"  {'case':<{width}}" + "".join(f"{o:>12}" for o in outcomes)]  # fmt: skip
        lines += [f"  {c:<{width}}" + "".join(f"{self.counts[(c, o)]:>12}" for o in outcomes) for c in cases]
        report(*lines)
