"""The Kubernetes CEL environment, over the `cel` package: compiling rules and handing them values.

`compile_rule` compiles an expression (cached by its text) and says whether it reads `oldSelf`; `context`
is the evaluation context with every function a rule may call; `to_cel` types a JSON value by its schema
node as the API server does (numbers as doubles, integers as ints, formatted strings as timestamps,
durations and bytes, declared property names escaped).

What the `cel` package lacks is added here: property names that are not CEL identifiers are escaped as
Kubernetes escapes them (`escape`); the list library (`isSorted`, `indexOf`/`lastIndexOf` on lists, besides
the `cel` package's `sum`, `min`, `max` and string functions) and the regex library (`find`, `findAll`).
The parsers of formatted strings (`times.parse_time`, `parse_bytes`, and Go durations from `goparse`) are
what CEL sees; `parse_bytes` is also admission's `byte` format check. Everything is pure.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import cel
from cel import stdlib

from kubesemantics import goparse, times


def parse_bytes(text: str) -> bytes:
    """Base64 data; ValueError otherwise."""
    return base64.b64decode(text, validate=True)


_FORMAT_PARSERS: dict[str, Callable[[str], Any]] = {
    "date-time": times.parse_time,
    "datetime": times.parse_time,
    "duration": goparse.to_timedelta,
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


def context(variables: dict[str, Any]) -> Any:
    """The evaluation context of a rule: its variables (`self`, `oldSelf`) and every function."""
    return cel.Context(variables=variables, functions=functions())


@lru_cache(maxsize=4096)
def compile_rule(expression: str) -> tuple[Any, bool]:
    """The compiled program of an expression and whether it reads `oldSelf`; raises ValueError when invalid,
    with cel-go's text (`ERROR: <input>:1:8: Syntax error: ...`)."""
    try:
        program = cel.compile(expression)
    except ValueError as error:
        raise ValueError(str(error).removeprefix(f"Failed to parse expression '{expression}': ")) from None
    return program, "oldSelf" in program.variables()


def to_cel(value: Any, node: Mapping[str, Any]) -> Any:
    """A JSON value as the API server hands it to CEL: typed by its schema (numbers as double, integers as int)."""
    kind = node.get("type")
    if value is None:
        return None
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "string" and isinstance(value, str) and node.get("format"):
        return formatted(value, str(node["format"]))
    if isinstance(value, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        extra_node = extra if isinstance(extra, dict) else {}
        # Declared properties are CEL fields, named by their escaped form; map keys stay as they are.
        return {
            (escape(k) if k in props else k): to_cel(v, props.get(k, extra_node)) for k, v in value.items()
        }
    if isinstance(value, list):
        items = node.get("items")
        items_node = items if isinstance(items, dict) else {}
        return [to_cel(v, items_node) for v in value]
    return value
