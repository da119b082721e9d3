"""The Kubernetes CEL environment: values typed by their schema, escaped names, the extension libraries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesemantics import cellib


def _run(expression: str, value: Any, node: dict[str, Any]) -> Any:
    program, _ = cellib.compile_rule(expression)
    return program.execute(cellib.context({"self": cellib.to_cel(value, node)}))


def test_values_are_typed_by_their_schema() -> None:
    node = {
        "type": "object",
        "properties": {
            "ratio": {"type": "number"},
            "count": {"type": "integer"},
            "at": {"type": "string", "format": "date-time"},
            "every": {"type": "string", "format": "duration"},
            "x-y": {"type": "string"},
        },
    }
    value = {"ratio": 1, "count": 2.0, "at": "2024-01-02T03:04:05Z", "every": "1m30s", "x-y": "v"}
    assert cellib.to_cel(value, node) == {
        "ratio": 1.0,
        "count": 2,
        "at": datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        "every": timedelta(seconds=90),
        "x__dash__y": "v",
    }
    assert isinstance(cellib.to_cel(1, {"type": "number"}), float)


def test_invalid_formatted_strings_stay_strings() -> None:
    assert cellib.formatted("soon", "date-time") == "soon"
    assert cellib.formatted("5x", "duration") == "5x"
    assert cellib.formatted("anything", "no-such-format") == "anything"


@pytest.mark.parametrize(
    ("name", "escaped"),
    [
        ("namespace", "__namespace__"),
        ("a.b/c-d", "a__dot__b__slash__c__dash__d"),
        ("x__y", "x__underscores__y"),
    ],
)
def test_escaping(name: str, escaped: str) -> None:
    assert cellib.escape(name) == escaped


def test_the_list_and_regex_libraries() -> None:
    node = {"type": "array", "items": {"type": "integer"}}
    assert (
        _run("self.isSorted() && self.indexOf(2) == 1 && self.lastIndexOf(9) == -1", [1, 2, 2], node) is True
    )
    assert _run("self.find('[0-9]+') == '12'", "ab12cd345", {"type": "string"}) is True
    assert _run("self.findAll('[0-9]+') == ['12', '345']", "ab12cd345", {"type": "string"}) is True


def test_compiling_says_whether_a_rule_reads_old_self_and_reports_syntax_errors() -> None:
    assert cellib.compile_rule("self == oldSelf")[1] is True
    assert cellib.compile_rule("self > 1")[1] is False
    with pytest.raises(ValueError) as caught:
        cellib.compile_rule("self >")
    assert not str(caught.value).startswith("Failed to parse expression")
