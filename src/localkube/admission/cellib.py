"""The parts of Kubernetes' CEL environment that the `cel` package lacks.

Property names that are not CEL identifiers are escaped as Kubernetes escapes them (`escape`).
Functions: the list library (`isSorted`, `indexOf`/`lastIndexOf` on lists, besides the `cel` package's
`sum`, `min`, `max` and string functions) and the regex library (`find`, `findAll`). Values: strings with
format `date-time`, `duration` and `byte` reach CEL as timestamps, durations and bytes, as in Kubernetes;
the parsers here are also the format checks of admission. Everything is pure.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import cel
from cel import stdlib

# RFC 3339, and the zone-less local form go-openapi's strfmt also accepts (read as UTC).
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_timestamp(text: str) -> datetime:
    """An RFC 3339 date-time; ValueError otherwise."""
    if not _TIMESTAMP.fullmatch(text):
        raise ValueError(f"not an RFC 3339 date-time: {text!r}")
    parsed = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_duration(text: str) -> timedelta:
    """A Go duration (`1h30m`, `-1.5s`, `0`); ValueError otherwise."""
    sign, body = (-1, text[1:]) if text.startswith("-") else (1, text.removeprefix("+"))
    if body == "0":
        return timedelta(0)
    position, seconds = 0, 0.0
    for part in _DURATION_PART.finditer(body):
        if part.start() != position:
            break
        seconds += float(part.group(1)) * _UNITS[part.group(2)]
        position = part.end()
    if not body or position != len(body):
        raise ValueError(f"not a duration: {text!r}")
    return timedelta(seconds=sign * seconds)


def parse_bytes(text: str) -> bytes:
    """Base64 data; ValueError otherwise."""
    return base64.b64decode(text, validate=True)


_FORMAT_PARSERS: dict[str, Callable[[str], Any]] = {
    "date-time": parse_timestamp,
    "datetime": parse_timestamp,
    "duration": parse_duration,
    "byte": parse_bytes,
}


def formatted(value: str, fmt: str) -> Any:
    """A formatted string as CEL sees it; the string itself when the format is unknown or the value invalid."""
    parser = _FORMAT_PARSERS.get(fmt)
    if parser is None:
        return value
    try:
        return parser(value)
    except ValueError:
        return value


_RESERVED = frozenset(
    {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if"}
    | {"import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
)
_ESCAPES = (("__", "__underscores__"), (".", "__dot__"), ("-", "__dash__"), ("/", "__slash__"))


def escape(name: str) -> str:
    """A property name as a CEL rule names it: `foo-bar` is `foo__dash__bar`, `namespace` is `__namespace__`."""
    if name in _RESERVED:
        return f"__{name}__"
    for plain, escaped in _ESCAPES:
        name = name.replace(plain, escaped)
    return name


def _is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in zip(items, items[1:], strict=False))


def _index_of(container: Any, item: Any, *rest: Any) -> int:
    if isinstance(container, list):
        return next((i for i, x in enumerate(container) if x == item), -1)
    return stdlib.index_of(container, item, *rest)


def _last_index_of(container: Any, item: Any, *rest: Any) -> int:
    if isinstance(container, list):
        return next((i for i in range(len(container) - 1, -1, -1) if container[i] == item), -1)
    return stdlib.last_index_of(container, item, *rest)


def _find(text: str, pattern: str) -> str:
    match = re.search(pattern, text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


@lru_cache(maxsize=1)
def functions() -> dict[str, Callable[..., Any]]:
    """Every function a rule may call beyond the `cel` package's built-ins."""
    context = cel.Context()
    stdlib.add_stdlib_to_context(context)
    return {
        **context.functions,
        "isSorted": _is_sorted,
        "indexOf": _index_of,
        "lastIndexOf": _last_index_of,
        "find": _find,
        "findAll": _find_all,
    }
