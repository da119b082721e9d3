"""CEL rules of a schema (`x-kubernetes-validations`), evaluated as the API server does for custom resources.

`self` is the value at the node that declares the rules; `oldSelf` is the correlated old value, present only
on update and only where the old object can be correlated (object properties, map values, items of
`x-kubernetes-list-type: map` lists). A rule that reads `oldSelf` (a transition rule) is skipped when there is
no old value, unless it sets `optionalOldSelf`, which makes `oldSelf` a CEL optional. A rule that does not
read `oldSelf` is ratcheted: its failure is ignored when the value is unchanged from the old one, as with the
CRDValidationRatcheting feature (on by default since Kubernetes 1.30). Rules at the root see only the name and
generateName of the metadata; failures there are reported at the path `<nil>`, as the API server does.
Compiled programs are cached by expression text; evaluation has no side effects.
"""

from __future__ import annotations

from typing import Any

import cel

from kubesemantics import cellib
from kubesemantics.jsonvalue import ABSENT, json_equal
from kubesemantics.schema import ROOT_OWNED, additional
from localkube.admission import errors, validation
from localkube.admission.errors import FieldError

# What the cel package raises when an expression fails at run time (no such overload, overflow, bad index...).
_EVALUATION_ERRORS = (ArithmeticError, LookupError, ValueError, TypeError, RuntimeError)


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
            program, _ = cellib.compile_rule(expression)
            text = program.execute(cellib.context(variables))
        except _EVALUATION_ERRORS:
            text = None
        if isinstance(text, str) and text.strip():
            return text
    return _default_message(rule)


def evaluate_rules(value: Any, old: Any, node: dict[str, Any], path: str) -> list[FieldError]:
    """The failures of the rules declared at one schema node, for the value at `path`."""
    found: list[FieldError] = []
    unchanged = old is not ABSENT and json_equal(old, value)
    self_value = cellib.to_cel(value, node)
    for rule in node.get("x-kubernetes-validations") or []:
        expression = str(rule.get("rule", ""))
        rule_path = path
        if rule.get("fieldPath"):
            rule_path = (
                f"{path}{rule['fieldPath']}" if path != "<nil>" else str(rule["fieldPath"]).lstrip(".")
            )
        try:
            program, uses_old = cellib.compile_rule(expression)
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
            old_value = None if old is ABSENT else cellib.to_cel(old, node)
            if optional_old:
                old_value = cel.OptionalValue.none() if old is ABSENT else cel.OptionalValue.of(old_value)
            variables["oldSelf"] = old_value
        try:
            result = program.execute(cellib.context(variables))
        except KeyError as error:
            detail = (
                f"no such key: {error.args[0] if error.args else error} evaluating rule: {_rule_text(rule)}"
            )
            found.append(FieldError(path, errors.INVALID, node.get("type", ""), detail))
            continue
        except _EVALUATION_ERRORS as error:
            # cel-go says "division by zero"; the cel package adds where it happened.
            reason = str(error).removesuffix(" in CEL expression")
            detail = f"{reason} evaluating rule: {_rule_text(rule)}"
            found.append(FieldError(path, errors.INVALID, node.get("type", ""), detail))
            continue
        if result is not True:
            found.append(_error_for(rule_path, node, rule, _message(rule, variables)))
    return found


def check_rules(obj: dict[str, Any], old: Any, schema: dict[str, Any]) -> list[FieldError]:
    """The failures of every rule of a schema on an object (old: its previous version, or ABSENT)."""
    found: list[FieldError] = []
    _check_rules(obj, old, schema, "<nil>", found, root=True)
    return found


def _root_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a root rule sees it: of its metadata, only name and generateName."""
    metadata = obj.get("metadata") or {}
    visible = {k: metadata[k] for k in ("name", "generateName") if k in metadata}
    return {**obj, "metadata": visible} if "metadata" in obj else obj


def _check_rules(
    value: Any, old: Any, node: dict[str, Any], path: str, found: list[FieldError], *, root: bool = False
) -> None:
    if value is None:
        return
    if node.get("x-kubernetes-validations"):
        if root:
            value_seen, old_seen = _root_view(value), old if old is ABSENT else _root_view(old)
            found.extend(evaluate_rules(value_seen, old_seen, node, path))
        else:
            found.extend(evaluate_rules(value, old, node, path))
    base = "" if path == "<nil>" else path
    if isinstance(value, dict):
        props: dict[str, Any] = node.get("properties") or {}
        extra = additional(node)
        old_map = old if isinstance(old, dict) else {}
        for key, child in value.items():
            if root and key in ROOT_OWNED:
                continue
            old_child = old_map.get(key, ABSENT)
            if key in props:
                _check_rules(child, old_child, props[key], validation.field_child(base, key), found)
            elif extra is not None:
                _check_rules(child, old_child, extra, f"{base}[{key}]", found)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        olds = validation.correlate_items(value, old, node)
        for index, item in enumerate(value):
            _check_rules(item, olds[index], node["items"], f"{base}[{index}]", found)
