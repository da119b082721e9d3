"""The primitives of structural-schema checks: rendered values, RE2 patterns, list identity, defaulting."""

from __future__ import annotations

from typing import Any

import pytest

from kubesemantics import schema


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, '"null"'),
        (True, "true"),
        (7, "7"),
        (2.0, "2"),
        (0.5, "0.5"),
        ("é", '"é"'),
        ({"b": 1, "a": [1]}, '{"a":[1],"b":1}'),
    ],
)
def test_values_render_as_go_prints_them(value: Any, text: str) -> None:
    assert schema.render_value(value) == text


def test_patterns_read_as_re2() -> None:
    assert schema.pattern("^[a-z]+$").search("abc\n") is None  # $ ends the text, not a line
    assert schema.pattern(r"^\d+\z").search("12") is not None
    assert schema.pattern(r"^\w+$").search("é") is None  # ASCII classes


@pytest.mark.parametrize(
    ("text", "matches", "misses"),
    [
        # Kueue's CRDs (AdmissionCheck's parameters.kind): RE2 takes flags past the start, Python only scoped.
        ("^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$", ["ProvisioningRequestConfig", "a-1"], ["-a", "a-", "a\n"]),
        ("(?i)abc", ["ABC"], ["ab"]),  # at the start: as Python reads it
        ("a(b(?i)c)d", ["abCd"], ["aBcd", "abcD"]),  # the rest of the enclosing group only
        ("x(?i)y|z", ["xY", "Z"], ["Xy"]),  # to the end of the text, across the alternation
        (r"[(?i)]\((?i)a", ["((A", "i(a"], ["I(a"]),  # not inside a class, nor after an escaped parenthesis
    ],
)
def test_flag_groups_past_the_start_apply_to_the_rest_of_their_group(
    text: str, matches: list[str], misses: list[str]
) -> None:
    compiled = schema.pattern(text)
    assert [m for m in matches if compiled.fullmatch(m) is None] == []
    assert [m for m in misses if compiled.fullmatch(m) is not None] == []


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("2026-01-01T00:00:00Z", True),
        ("2026-01-01t23:59:59.123+05:30", True),
        ("2026-02-30T00:00:00Z", True),  # fields are range-checked, calendars are not
        ("2026-13-01T00:00:00Z", False),
        ("2026-01-01T24:00:00Z", False),
        ("2026-01-01T00:00:00", False),
        ("2026-01-01", False),
    ],
)
def test_date_time_format_as_kube_openapi_reads_it(text: str, valid: bool) -> None:
    assert schema.is_date_time(text) is valid


def test_list_identity() -> None:
    as_map = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"]}
    item = {"name": "http", "port": 80}
    assert schema.list_identity(item, as_map) == {"name": "http"}
    assert schema.list_identity(item, {"x-kubernetes-list-type": "set"}) == item


def test_defaults_fill_absent_and_null_fields_top_down() -> None:
    node = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "default": "v9"},
            "spec": {
                "type": "object",
                "default": {},
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "note": {"type": "string", "nullable": True, "default": "n"},
                    "ports": {"type": "array", "items": {"type": "integer", "default": 80}},
                },
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    value: dict[str, Any] = {
        "spec": {"replicas": None, "note": None, "ports": [None, 81]},
        "labels": {"a": None},
    }
    schema.apply_defaults(value, node, root=True)
    assert value == {"spec": {"replicas": 1, "note": None, "ports": [80, 81]}, "labels": {}}
    empty: dict[str, Any] = {}
    schema.apply_defaults(empty, node)
    assert empty == {"apiVersion": "v9", "spec": {"replicas": 1, "note": "n"}}


def test_enum_values_print_quoted_whatever_their_type() -> None:
    assert schema.supported_values(["a", 1, 2.0, True]) == 'supported values: "a", "1", "2", "true"'


def test_value_error_details_name_the_field_in_body() -> None:
    assert schema.type_detail("spec.x", ["integer", "string"], "boolean") == (
        'spec.x in body must be of type integer,string: "boolean"'
    )
    assert (
        schema.bound_detail("spec.x", "less than or equal to", 10.0)
        == "spec.x in body should be less than or equal to 10"
    )
