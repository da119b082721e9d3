"""Decoded JSON values as JSON sees them: their schema type names and types, strict equality, and absence.

Python's own comparison is not JSON's: `True == 1` and `1 == 1.0` hold in Python, while for the API
server a boolean is never a number. Integers and integral floats are the same JSON number.

`MAX_DEPTH` bounds how deep a value may nest where Python walks it: both localkube and kuberay walk objects
recursively (copies, schemas, patches, pydantic) and orjson encodes at most 254 levels, so a deeper value
would fail half-way through; no Kubernetes object comes near it (a real API server decodes up to 10000).
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 100
ABSENT: Any = object()
"""A value that is not there: the old value on create, or a field the old object lacked."""


def json_type(value: Any) -> str:
    """The JSON schema type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def has_json_type(value: Any, expected: str) -> bool:
    """Whether a value is of a schema type, as OpenAPI validation reads it: an integer is also a number, and
    a number with no fraction is also an integer."""
    actual = json_type(value)
    if actual == expected:
        return True
    if actual == "integer":
        return expected == "number"
    return actual == "number" and expected == "integer" and float(value).is_integer()


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: numbers by value, but booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return bool(a == b)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """The field path (`spec.a[0].b`) at which `value` nests deeper than `limit` levels, or None.
    Iterative, so that the check itself has no recursion limit."""
    pending: list[tuple[Any, str, int]] = [(value, "", 0)]
    while pending:
        node, path, depth = pending.pop()
        children = (
            node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        )
        for key, child in children:
            if not isinstance(child, (dict, list)):
                continue
            step = f"[{key}]" if isinstance(key, int) else (f".{key}" if path else str(key))
            if depth + 1 >= limit:
                return path + step
            pending.append((child, path + step, depth + 1))
    return None
