"""Label and field selectors: the query syntax the API server takes, and selectors written as objects."""

from __future__ import annotations

from typing import Any

import pytest

from kubesemantics import selectors


def _obj(labels: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "a", "labels": labels or {}}, **fields}


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ("app=ray", {"app": "ray"}, True),
        ("app==ray", {"app": "web"}, False),
        ("app!=ray", {}, True),  # != and notin also select objects without the label
        ("app in (ray, web),tier", {"app": "web", "tier": "x"}, True),
        ("app in (ray, web),tier", {"app": "web"}, False),
        ("app notin (ray)", {"app": "ray"}, False),
        ("!tier", {"app": "ray"}, True),
        ("!tier", {"tier": ""}, False),
    ],
)
def test_label_selector_syntax(selector: str, labels: dict[str, str], selected: bool) -> None:
    match = selectors.label_matcher(selector)
    assert match is not None and match(_obj(labels)) is selected


@pytest.mark.parametrize("selector", [None, "", "  "])
def test_an_empty_selector_selects_everything(selector: str | None) -> None:
    assert selectors.label_matcher(selector) is None and selectors.field_matcher(selector) is None


@pytest.mark.parametrize("selector", ["app in (ray", "app in ray)", "a b c"])
def test_label_selector_syntax_errors(selector: str) -> None:
    with pytest.raises(selectors.SelectorError):
        selectors.label_matcher(selector)


def test_field_selectors_read_dotted_paths_and_missing_fields_as_empty() -> None:
    pod = _obj(spec={"nodeName": "n1", "hostNetwork": True}, status={"phase": "Running"})
    assert selectors.field_value(pod, "spec.hostNetwork") == "true"
    match = selectors.field_matcher("metadata.name=a,status.phase!=Pending,spec.missing=")
    assert match is not None and match(pod)
    other = selectors.field_matcher("spec.nodeName==n2")
    assert other is not None and not other(pod)
    with pytest.raises(selectors.SelectorError, match="can't understand 'spec.nodeName'"):
        selectors.field_matcher("spec.nodeName")


def test_label_selector_objects() -> None:
    selector = {
        "matchLabels": {"app": "ray"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["head", "worker"]},
            {"key": "spot", "operator": "DoesNotExist"},
        ],
    }
    assert selectors.label_selector_matches(selector, {"app": "ray", "tier": "head"})
    assert not selectors.label_selector_matches(selector, {"app": "ray", "tier": "head", "spot": "1"})
    assert not selectors.label_selector_matches(selector, {"app": "ray"})
    assert selectors.label_selector_matches({}, {"anything": "x"})
    assert not selectors.label_selector_matches(
        {"matchExpressions": [{"key": "a", "operator": "Sometimes"}]}, {"a": "1"}
    )


def test_node_selector_requirements_compare_integers() -> None:
    labels = {"cores": "8", "name": "x"}
    assert selectors.requirement_matches({"key": "cores", "operator": "Gt", "values": ["4"]}, labels)
    assert not selectors.requirement_matches({"key": "cores", "operator": "Lt", "values": ["4"]}, labels)
    assert not selectors.requirement_matches({"key": "name", "operator": "Gt", "values": ["4"]}, labels)
    assert selectors.matches_labels({"name": "x"}, labels) and not selectors.matches_labels(
        {"name": "y"}, labels
    )


def test_selector_text_round_trips_through_the_query_syntax() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "t", "operator": "NotIn", "values": ["y", "x"]},
            {"key": "e", "operator": "Exists"},
            {"key": "d", "operator": "DoesNotExist"},
        ],
    }
    text = selectors.selector_text(selector)
    assert text == "a=1,b=2,t notin (x,y),e,!d"
    match = selectors.label_matcher(text)
    for labels in ({"a": "1", "b": "2", "e": ""}, {"a": "1", "b": "2", "e": "", "t": "x"}, {"a": "1"}):
        assert match is not None and match(_obj(labels)) is selectors.label_selector_matches(selector, labels)
