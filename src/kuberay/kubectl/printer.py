"""kubectl's output, as upstream's plugin prints it through `k8s.io/cli-runtime`'s table printer.

Tables: headers upper-cased, cells aligned by Go's tabwriter with kubectl's settings (minimum cell width 6,
padding 3, spaces), the last cell of a line unpadded, and nothing at all (not even the header) for zero rows.
Ages are apimachinery's `HumanDuration`, `<unknown>` without a creationTimestamp.

YAML: keys sorted and strings that would read as another type double-quoted, as Go's yaml marshaller
writes them; `-o json` is kubectl's indented JSON. A list inside a message reads as Go's `%v` prints a
slice: `[a b c]`.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

import yaml

from kubesemantics import times
from kubesemantics.goparse import human_duration

MIN_WIDTH = 6
PADDING = 3


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """The table's text, each line ending in a newline; "" when there are no rows."""
    if not rows:
        return ""
    lines = [[h.upper() for h in headers], *[[str(cell) for cell in row] for row in rows]]
    widths = [max(MIN_WIDTH, max(len(line[i]) for line in lines) + PADDING) for i in range(len(headers) - 1)]
    out = []
    for line in lines:
        padded = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        out.append("".join(padded) + line[-1] + "\n")
    return "".join(out)


def go_list(items: Sequence[object]) -> str:
    """A slice as Go's `%v` prints it: `[a b]`, not Python's `['a', 'b']`."""
    return "[" + " ".join(str(item) for item in items) + "]"


def age(obj: dict[str, Any], now: datetime.datetime | None = None) -> str:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    then = times.parse_time(str(stamp))
    return human_duration(((now or datetime.datetime.now(datetime.UTC)) - then).total_seconds())


class _GoStyleDumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Go's marshaller double-quotes a string that a plain scalar would turn into a number, bool or null.
    plain_tag = dumper.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]  # PyYAML's stubs leave it untyped
    style = '"' if plain_tag != "tag:yaml.org,2002:str" else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_GoStyleDumper.add_representer(str, _represent_str)


def to_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_GoStyleDumper, sort_keys=True, default_flow_style=False, width=1 << 16)


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=4) + "\n"
