"""What every structural-schema check shares, whoever runs it: the API server's words and its defaulting.

- The cause types of apimachinery's `field.Error` (`Required value`, `Invalid value`, ...) and how a value
  prints inside one (`render_value`: bare scalars, Go-quoted strings, JSON otherwise; `render_number`:
  a float64 as Go's `%v` prints it); the details of kube-openapi's value errors (`*_detail`,
  `supported_values`).
- `pattern`: a schema's RE2 `pattern` as a Python regular expression; `is_date_time`: the `date-time`
  format as kube-openapi checks it.
- `list_identity`: what makes an item of an `x-kubernetes-list-type: set|map` list unique.
- `apply_defaults`: the API server's structural defaulting, in place; `additional`: a node's map-value
  schema; `ROOT_OWNED`: the root fields a schema does not own.

Both the operator's offline schema check and localkube's admission build on these, so a message or a
default reads the same from either.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

REQUIRED: Final = "Required value"
INVALID: Final = "Invalid value"
UNSUPPORTED: Final = "Unsupported value"
FORBIDDEN: Final = "Forbidden"
TOO_LONG: Final = "Too long"
TOO_MANY: Final = "Too many"
DUPLICATE: Final = "Duplicate value"
NOT_FOUND: Final = "Not found"
INTERNAL: Final = "Internal error"

ROOT_OWNED: Final = ("apiVersion", "kind", "metadata")
"""The root fields that belong to the API server rather than to the schema."""


def render_value(value: Any) -> str:
    """A value as Go's API server prints it inside an error: bare scalars, quoted strings, JSON otherwise."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return render_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def render_number(number: float) -> str:
    """A number as Go's `%v` prints a float64: integral values without a fraction."""
    if isinstance(number, float) and number.is_integer() and abs(number) < 1e21:
        return str(int(number))
    return str(number)


# --- the details of kube-openapi's value errors, which name the field once more ("spec.x in body ...") ------


def type_detail(name: str, expected: Sequence[str], actual: str) -> str:
    return f'{name} in body must be of type {",".join(expected)}: "{actual}"'


def format_detail(name: str, fmt: str, value: str) -> str:
    return f"{name} in body must be of type {fmt}: {render_value(value)}"


def pattern_detail(name: str, regex: str) -> str:
    return f"{name} in body should match '{regex}'"


def min_length_detail(name: str, limit: int) -> str:
    return f"{name} in body should be at least {limit} chars long"


def max_length_detail(limit: int) -> str:
    return f"may not be more than {limit} bytes"


def bound_detail(name: str, relation: str, limit: float) -> str:
    """`relation`: "greater than", "greater than or equal to", "less than", ... (or "a multiple of")."""
    return f"{name} in body should be {relation} {render_number(limit)}"


def min_items_detail(name: str, limit: int) -> str:
    return f"{name} in body should have at least {limit} items"


def supported_values(allowed: Sequence[Any]) -> str:
    """An enum's values as `field.NotSupported` lists them: each printed with `%v`, then quoted."""
    return "supported values: " + ", ".join(
        render_value(value if isinstance(value, str) else render_value(value)) for value in allowed
    )


@lru_cache(maxsize=1024)
def pattern(text: str) -> re.Pattern[str]:
    """A Go (RE2) pattern as a Python one: `$` and `\\z` end the text (Python's `$` also matches before a
    final newline), the character classes are ASCII, as in RE2, and a flag group past the start (`^(?i)...`,
    which RE2 applies to the rest of its group and Python refuses) is that rest in a scoped group."""
    translated = re.sub(r"(?<!\\)\$$", r"\\Z", text).replace(r"\z", r"\Z")
    return re.compile(_scoped_flags(translated), re.ASCII)


_FLAG_GROUP = re.compile(r"\(\?([imsU-]+)\)")


def _scoped_flags(text: str) -> str:
    """`(?flags)` anywhere but the very start as `(?flags:`, closed where its alternative ends (`|`, reopened
    for the next one, as RE2's flags hold to the end of the group) and where its enclosing group closes."""
    out: list[str] = []
    # Per open group (the outermost is the whole text): the flags of the scoped groups opened in it.
    scopes: list[list[str]] = [[]]
    i, in_class = 0, False
    while i < len(text):
        char = text[i]
        if char == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            member = 3 if text.startswith("^]", i + 1) else 2 if text.startswith("]", i + 1) else 0
            if member:  # a leading `]` is a member, not the class's end
                out.append(text[i : i + member])
                i += member
                continue
        elif (flags := _FLAG_GROUP.match(text, i)) and i > 0:
            out.append(f"(?{flags[1]}:")
            scopes[-1].append(flags[1])
            i = flags.end()
            continue
        elif char == "(":
            scopes.append([])
        elif char == ")" and len(scopes) > 1:
            out.append(")" * len(scopes.pop()))
        elif char == "|" and scopes[-1]:
            out.append(")" * len(scopes[-1]) + "|" + "".join(f"(?{f}:" for f in scopes[-1]))
            i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out) + ")" * len(scopes[0])


_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")


def is_date_time(text: str) -> bool:
    """kube-openapi's `IsDateTime`: a date, ``T``, a time with a zone; fields range-checked, not calendars."""
    parts = text.lower().split("t")
    date = _DATE.fullmatch(parts[0])
    time = _TIME.fullmatch(parts[1]) if len(parts) > 1 else None
    if len(text) < 4 or date is None or time is None:
        return False
    return (
        "01" <= date[2] <= "12"
        and "01" <= date[3] <= "31"
        and time[1] <= "23"
        and time[2] <= "59"
        and time[3] <= "59"
    )


def list_identity(item: Any, node: Mapping[str, Any]) -> Any:
    """What two items of the list that `node` describes must not share: the whole item in a `set` list,
    the key fields (`x-kubernetes-list-map-keys`) present in an object item of a `map` list."""
    if node.get("x-kubernetes-list-type") == "map" and isinstance(item, dict):
        keys = node.get("x-kubernetes-list-map-keys") or []
        return {key: item[key] for key in keys if key in item}
    return item


def _drops_null(node: Mapping[str, Any] | None) -> bool:
    return node is not None and not node.get("nullable")


def additional(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The schema of a node's map values (`additionalProperties`), if it has one."""
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def apply_defaults(value: Any, node: Mapping[str, Any], *, root: bool = False) -> None:
    """Apply schema defaults in place, top-down, and drop nulls of non-nullable fields that have no default
    (a null reads as absent, so it takes the default). At the `root`, `ROOT_OWNED` fields are left alone."""
    if isinstance(value, list):
        items = node.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                if item is None and _drops_null(items) and "default" in items:
                    value[index] = copy.deepcopy(items["default"])
                apply_defaults(value[index], items)
        return
    if not isinstance(value, dict):
        return
    props: Mapping[str, Any] = node.get("properties") or {}
    for key, prop in props.items():
        if root and key in ROOT_OWNED:
            continue
        present = key in value
        if present and value[key] is None and _drops_null(prop):
            del value[key]
            present = False
        if not present and "default" in prop:
            value[key] = copy.deepcopy(prop["default"])
    extra = additional(node)
    for key in list(value):
        if root and key in ROOT_OWNED:
            continue
        child = props.get(key, extra)
        if child is None:
            continue
        if value[key] is None and key not in props and _drops_null(child):
            if "default" in child:
                value[key] = copy.deepcopy(child["default"])
            else:
                del value[key]
                continue
        apply_defaults(value[key], child)
