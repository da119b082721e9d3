"""JSON values as the API server sees them, not as Python compares them."""

from __future__ import annotations

from typing import Any

import pytest

from kubesemantics.jsonvalue import has_json_type, json_equal, json_type


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),
        (1, "integer"),
        (1.5, "number"),
        ("", "string"),
        ([], "array"),
        ({}, "object"),
    ],
)
def test_type_names(value: Any, name: str) -> None:
    assert json_type(value) == name


@pytest.mark.parametrize(
    ("value", "expected", "holds"),
    [
        (1, "number", True),
        (2.0, "integer", True),
        (2.5, "integer", False),
        (True, "integer", False),
        (False, "boolean", True),
        ("1", "integer", False),
    ],
)
def test_schema_types_as_openapi_reads_them(value: Any, expected: str, holds: bool) -> None:
    assert has_json_type(value, expected) is holds


def test_equality_keeps_booleans_apart_from_numbers() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal(True, 1) and not json_equal([0], [False]) and not json_equal({"a": 1}, [1])
