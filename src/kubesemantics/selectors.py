"""Label and field selectors: parsing the query-string syntax, and matching labels and objects.

Label selectors take the full syntax of the real server: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
`k notin (a,b)`, `k` (exists) and `!k` (does not exist), joined by commas, all of which must hold.
Field selectors take `f=v`, `f==v` and `f!=v` on any dotted path (`metadata.name`, `spec.nodeName`,
`status.phase`, `involvedObject.uid`, ...); a missing field reads as the empty string, as on a real server.
A syntax error raises `SelectorError` (the API server answers it with 400 BadRequest).

Selectors written as objects match too: a map of labels (a Service's `spec.selector`, a pod's
`nodeSelector`: `matches_labels`), a `metav1.LabelSelector` (`matchLabels` and `matchExpressions`:
`label_selector_matches`) and one requirement of it or of a node selector term (`In`, `NotIn`, `Exists`,
`DoesNotExist`, and the node selector's `Gt`, `Lt`: `requirement_matches`). `selector_text` writes a
`metav1.LabelSelector` in the query-string syntax.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubesemantics.errors import SemanticsError

Match = Callable[[dict[str, Any]], bool]


class SelectorError(SemanticsError):
    """A selector that does not parse."""


Requirement = dict[str, Any]
"""One requirement as `matchExpressions` writes it: `key`, `operator` (`In`, `NotIn`, `Exists`, ...), `values`."""

# The query syntax's operators as requirement operators: `k=v` is `k in (v)`, `k!=v` is `k notin (v)`.
_OPERATORS = {"=": "In", "==": "In", "in": "In", "!=": "NotIn", "notin": "NotIn"}


# The lexer's symbols, longest first as it reads them.
_SYMBOLS = ("==", "!=", "=", "!", "(", ")", ",")
_SET_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQUALITY_RE = re.compile(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(\S*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([^=!\s(),]+)\s*$")


def _split_requirements(text: str) -> list[str]:
    """Splits on commas that are not inside a parenthesised value set."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unable to parse requirement: unexpected ')' in {text!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise SelectorError(f"unable to parse requirement: unclosed '(' in {text!r}")
    parts.append("".join(current))
    return parts


def _parse_label_requirement(text: str) -> Requirement:
    if match := _SET_RE.match(text):
        key, operator, raw_values = match.groups()
        values = sorted({v.strip() for v in raw_values.split(",") if v.strip()})
        return {"key": key, "operator": _OPERATORS[operator], "values": values}
    if match := _EQUALITY_RE.match(text):
        key, operator, value = match.groups()
        # The real lexer reads `k === v` as `k`, `==`, then `=` where a value must come.
        symbol = next((s for s in _SYMBOLS if value.startswith(s)), None)
        if symbol is not None:
            raise SelectorError(f"unable to parse requirement: found '{symbol}', expected: identifier")
        return {"key": key, "operator": _OPERATORS[operator], "values": [value]}
    if match := _EXISTS_RE.match(text):
        negated, key = match.groups()
        return {"key": key, "operator": "DoesNotExist" if negated else "Exists"}
    raise SelectorError(f"unable to parse requirement: {text.strip()!r}")


def label_matcher(text: str | None) -> Match | None:
    """A predicate over objects for a `labelSelector` query value; None when it selects everything."""
    if not text or not text.strip():
        return None
    requirements = [_parse_label_requirement(part) for part in _split_requirements(text) if part.strip()]

    def matches(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(requirement_matches(requirement, labels) for requirement in requirements)

    return matches


def field_value(obj: dict[str, Any], path: str) -> str:
    """The value at a dotted path as a field selector compares it ("" when absent)."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def field_terms(text: str | None) -> list[tuple[str, bool, str]]:
    """A `fieldSelector` query value's terms: (path, whether equal is wanted, value)."""
    terms: list[tuple[str, bool, str]] = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        match = _EQUALITY_RE.match(part)
        if match is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        path, operator, value = match.groups()
        terms.append((path, operator != "!=", value))
    return terms


def field_matcher(text: str | None) -> Match | None:
    """A predicate over objects for a `fieldSelector` query value; None when it selects everything."""
    terms = field_terms(text)
    if not terms:
        return None

    def matches(obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) is wanted for path, wanted, value in terms)

    return matches


def selector_text(selector: dict[str, Any] | None) -> str:
    """A metav1.LabelSelector (`matchLabels`, `matchExpressions`) in query-string syntax."""
    if not selector:
        return ""
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        if operator == "In":
            parts.append(f"{key} in ({values})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def matches_labels(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Whether every label of an equality map (`spec.selector`, `nodeSelector`) is set to its value."""
    return all(labels.get(key) == value for key, value in selector.items())


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether labels meet one `matchExpressions` requirement (`key`, `operator`, `values`); an unknown
    operator selects nothing, as the API server cannot turn it into a selector."""
    key, operator, values = (
        requirement.get("key", ""),
        requirement.get("operator"),
        requirement.get("values") or [],
    )
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            ours, theirs = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return ours > theirs if operator == "Gt" else ours < theirs
    return False


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a `metav1.LabelSelector` (`matchLabels` and `matchExpressions`, all of which must hold)
    selects the labels; an empty selector selects everything."""
    return matches_labels(selector.get("matchLabels") or {}, labels) and all(
        requirement_matches(requirement, labels) for requirement in selector.get("matchExpressions") or []
    )
