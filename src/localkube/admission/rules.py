"""CEL rules of a schema (`x-kubernetes-validations`), evaluated as the API server does for custom resources.

`self` is the value at the node that declares the rules; `oldSelf` is the correlated old value, present only
on update and only where the old object can be correlated (object properties, map values, items of
`x-kubernetes-list-type: map` lists). A rule that reads `oldSelf` (a transition rule) is skipped when there is
no old value, unless it sets `optionalOldSelf`, which makes `oldSelf` a CEL optional. A rule that does not read `oldSelf` is ratcheted: its failure is ignored when the value is
unchanged from the old one, as with the CRDValidationRatcheting feature (on by default since Kubernetes 1.30).
Compiled programs are cached by expression text; evaluation has no side effects.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import cel

from localkube.admission import cellib, errors
from localkube.admission.errors import FieldError
from localkube.admission.jsonvalue import json_equal

ABSENT: Any = object()
"""The correlated old value when there is none (create, or a field the old object lacked)."""


@lru_cache(maxsize=4096)
def compile_rule(expression: str) -> tuple[Any, bool]:
    """The compiled program of an expression and whether it reads `oldSelf`; raises ValueError when invalid,
    with cel-go's text (`ERROR: <input>:1:8: Syntax error: ...`)."""
    try:
        program = cel.compile(expression)
    except ValueError as error:
        raise ValueError(str(error).removeprefix(f"Failed to parse expression '{expression}': ")) from None
    return program, "oldSelf" in program.variables()


def _context(variables: dict[str, Any]) -> Any:
    return cel.Context(variables=variables, functions=cellib.functions())


def to_cel(value: Any, node: dict[str, Any]) -> Any:
    """A JSON value as the API server hands it to CEL: typed by its schema (numbers as double, integers as int)."""
    kind = node.get("type")
    if value is None:
        return None
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "string" and isinstance(value, str) and node.get("format"):
        return cellib.formatted(value, str(node["format"]))
    if isinstance(value, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        extra_node = extra if isinstance(extra, dict) else {}
        # Declared properties are CEL fields, named by their escaped form; map keys stay as they are.
        return {
            (cellib.escape(k) if k in props else k): to_cel(v, props.get(k, extra_node))
            for k, v in value.items()
        }
    if isinstance(value, list):
        items = node.get("items")
        items_node = items if isinstance(items, dict) else {}
        return [to_cel(v, items_node) for v in value]
    return value


def _error_for(path: str, node: dict[str, Any], rule: dict[str, Any], detail: str) -> FieldError:
    type_name = node.get("type", "")
    reason = rule.get("reason") or "FieldValueInvalid"
    if reason == "FieldValueForbidden":
        return FieldError(path, errors.FORBIDDEN, detail=detail)
    if reason == "FieldValueRequired":
        return FieldError(path, errors.REQUIRED, detail=detail)
    if reason == "FieldValueDuplicate":
        return FieldError(path, errors.DUPLICATE, type_name)
    return FieldError(path, errors.INVALID, type_name, detail)


def _rule_text(rule: dict[str, Any]) -> str:
    message = str(rule.get("message") or "").strip()
    return message or str(rule.get("rule", "")).strip()


def _default_message(rule: dict[str, Any]) -> str:
    message = str(rule.get("message") or "").strip()
    return message or f"failed rule: {_rule_text(rule)}"


def _message(rule: dict[str, Any], variables: dict[str, Any]) -> str:
    expression = rule.get("messageExpression")
    if expression:
        try:
            program, _ = compile_rule(expression)
            text = program.execute(_context(variables))
        except (ValueError, TypeError, KeyError, RuntimeError):
            text = None
        if isinstance(text, str) and text.strip():
            return text
    return _default_message(rule)


def evaluate_rules(value: Any, old: Any, node: dict[str, Any], path: str) -> list[FieldError]:
    """The failures of the rules declared at one schema node, for the value at `path`."""
    found: list[FieldError] = []
    unchanged = old is not ABSENT and json_equal(old, value)
    self_value = to_cel(value, node)
    for rule in node.get("x-kubernetes-validations") or []:
        expression = str(rule.get("rule", ""))
        rule_path = path
        if rule.get("fieldPath"):
            rule_path = (
                f"{path}{rule['fieldPath']}" if path != "<nil>" else str(rule["fieldPath"]).lstrip(".")
            )
        try:
            program, uses_old = compile_rule(expression)
        except ValueError as error:
            found.append(
                FieldError(path, errors.INVALID, node.get("type", ""), f"rule compile error: {error}")
            )
            continue
        optional_old = bool(rule.get("optionalOldSelf"))
        if uses_old and old is ABSENT and not optional_old:
            continue
        if unchanged and not uses_old:
            continue
        variables: dict[str, Any] = {"self": self_value}
        if uses_old:
            old_value = None if old is ABSENT else to_cel(old, node)
            if optional_old:
                old_value = cel.OptionalValue.none() if old is ABSENT else cel.OptionalValue.of(old_value)
            variables["oldSelf"] = old_value
        try:
            result = program.execute(_context(variables))
        except KeyError as error:
            detail = (
                f"no such key: {error.args[0] if error.args else error} evaluating rule: {_rule_text(rule)}"
            )
            found.append(FieldError(path, errors.INVALID, node.get("type", ""), detail))
            continue
        except (ValueError, TypeError, RuntimeError) as error:
            detail = f"{error} evaluating rule: {_rule_text(rule)}"
            found.append(FieldError(path, errors.INVALID, node.get("type", ""), detail))
            continue
        if result is not True:
            found.append(_error_for(rule_path, node, rule, _message(rule, variables)))
    return found
