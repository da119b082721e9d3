"""Decoded JSON values as JSON sees them: their schema type names and types, strict equality, and absence.

Python's own comparison is not JSON's: `True == 1` and `1 == 1.0` hold in Python, while for the API
server a boolean is never a number. Integers and integral floats are the same JSON number.
"""

from __future__ import annotations

from typing import Any

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
