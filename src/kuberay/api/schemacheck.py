"""The CRD schema check of a ray.io object, offline, as the API server runs it on create.

`check(obj, kind)` applies the schema's defaults to a copy (the API server defaults before it validates, so
a required field with a default never fails), then validates the copy against our generated CRD schema
(`kuberay.api.crd.schema`): types (with `nullable` and `x-kubernetes-int-or-string`), `required`, `enum`,
the `date-time` format, `pattern`, bounds on numbers, lengths and item counts, and the CEL rules of
`x-kubernetes-validations` with `self`. Transition rules (those reading `oldSelf`) only run on update and are
skipped. Fields the schema does not know are reported as kubectl's strict field validation (its default)
reports them, rather than silently pruned.

Errors are `FieldError`s whose path and message read like the API server's causes:
``spec.headGroupSpec: Required value``,
``spec.x: Unsupported value: "y": supported values: "a", "b"``,
``spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"``.
The JSON-schema walk is the `jsonschema` library's (Draft 4, which OpenAPI v3.0 schemas follow), with the
keywords whose behaviour or wording differs replaced by ones that follow the API server, plus the uniqueness
of `x-kubernetes-list-type: set/map` items (a duplicate shows its key fields as JSON, as localkube does). Not
checked: the top-level `metadata` (the API server's own ObjectMeta rules; our validation checks names).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from jsonschema import Draft4Validator, ValidationError

from kuberay.api import crd
from kuberay.api.validation import FieldError
from kubesemantics import cellib
from kubesemantics.jsonvalue import has_json_type, json_type
from kubesemantics.schema import (
    DUPLICATE,
    INVALID,
    REQUIRED,
    ROOT_OWNED,
    TOO_LONG,
    TOO_MANY,
    UNSUPPORTED,
    apply_defaults,
    bound_detail,
    format_detail,
    is_date_time,
    list_identity,
    max_length_detail,
    min_items_detail,
    min_length_detail,
    pattern_detail,
    render_value,
    supported_values,
    type_detail,
)
from kubesemantics.schema import pattern as re2_pattern

# Stands for the field's own path inside a message; replaced once the error's full path is known.
_HERE = "\x00path\x00"


def _render(value: Any) -> str:
    """A value as the API server prints it in an error; an object or array by its JSON type name."""
    return render_value(json_type(value) if isinstance(value, dict | list) else value)


def _invalid(value: Any, detail: str) -> ValidationError:
    return ValidationError(f"{INVALID}: {_render(value)}: {detail}")


# --- keywords, in the API server's wording -------------------------------------------------------------------
Keyword = Iterator[ValidationError]


def _type(_: Any, expected: str, value: Any, node: Mapping[str, Any]) -> Keyword:
    if node.get("x-kubernetes-int-or-string"):
        return
    if value is None and node.get("nullable"):
        return
    if not has_json_type(value, expected):
        actual = json_type(value)
        yield ValidationError(f"{INVALID}: {json.dumps(actual)}: " + type_detail(_HERE, [expected], actual))


def _any_of(_: Any, branches: list[Any], value: Any, node: Mapping[str, Any]) -> Keyword:
    # The only anyOf in our schemas is int-or-string's pair of types.
    if node.get("x-kubernetes-int-or-string") and not (
        has_json_type(value, "integer") or isinstance(value, str)
    ):
        actual = json_type(value)
        yield ValidationError(
            f"{INVALID}: {json.dumps(actual)}: " + type_detail(_HERE, ["integer", "string"], actual)
        )


def _required(_: Any, names: list[str], value: Any, __: Any) -> Keyword:
    if isinstance(value, dict):
        for name in names:
            if name not in value:
                yield ValidationError(REQUIRED, path=(name,))


def _enum(_: Any, allowed: list[Any], value: Any, __: Any) -> Keyword:
    if value not in allowed:
        yield ValidationError(f"{UNSUPPORTED}: {_render(value)}: {supported_values(allowed)}")


def _pattern(_: Any, pattern: str, value: Any, __: Any) -> Keyword:
    if isinstance(value, str) and re2_pattern(pattern).search(value) is None:
        yield _invalid(value, pattern_detail(_HERE, pattern))


def _format(_: Any, fmt: str, value: Any, __: Any) -> Keyword:
    # int32/int64 are not range-checked by the API server; date-time is the only other format we emit.
    if fmt == "date-time" and isinstance(value, str) and not is_date_time(value):
        yield _invalid(value, format_detail(_HERE, fmt, value))


def _minimum(_: Any, limit: float, value: Any, node: Mapping[str, Any]) -> Keyword:
    if has_json_type(value, "number"):
        if node.get("exclusiveMinimum") and value <= limit:
            yield _invalid(value, bound_detail(_HERE, "greater than", limit))
        elif value < limit:
            yield _invalid(value, bound_detail(_HERE, "greater than or equal to", limit))


def _maximum(_: Any, limit: float, value: Any, node: Mapping[str, Any]) -> Keyword:
    if has_json_type(value, "number"):
        if node.get("exclusiveMaximum") and value >= limit:
            yield _invalid(value, bound_detail(_HERE, "less than", limit))
        elif value > limit:
            yield _invalid(value, bound_detail(_HERE, "less than or equal to", limit))


def _max_length(_: Any, limit: int, value: Any, __: Any) -> Keyword:
    if isinstance(value, str) and len(value) > limit:
        yield ValidationError(f"{TOO_LONG}: {max_length_detail(limit)}")


def _min_length(_: Any, limit: int, value: Any, __: Any) -> Keyword:
    if isinstance(value, str) and len(value) < limit:
        yield _invalid(value, min_length_detail(_HERE, limit))


def _max_items(_: Any, limit: int, value: Any, __: Any) -> Keyword:
    if isinstance(value, list) and len(value) > limit:
        yield ValidationError(
            f"{TOO_MANY}: {len(value)}: must have at most {limit} {'item' if limit == 1 else 'items'}"
        )


def _min_items(_: Any, limit: int, value: Any, __: Any) -> Keyword:
    if isinstance(value, list) and len(value) < limit:
        yield _invalid(len(value), min_items_detail(_HERE, limit))


def _cel_rules(_: Any, rules: list[Mapping[str, Any]], value: Any, node: Mapping[str, Any]) -> Keyword:
    shown_type = json.dumps(node.get("type", ""))
    for rule in rules:
        expression = str(rule.get("rule", ""))
        program, transition = cellib.compile_rule(expression)
        if transition:
            continue
        context = cellib.context({"self": cellib.to_cel(value, node)})
        try:
            passed = program.execute(context) is True
            detail = str(rule.get("message") or f"failed rule: {expression}")
        except (KeyError, ValueError, TypeError, RuntimeError) as error:
            passed, detail = False, f"{error} evaluating rule: {rule.get('message') or expression}"
        if not passed:
            yield ValidationError(f"{INVALID}: {shown_type}: {detail}")


def _list_type(_: Any, list_type: str, value: Any, node: Mapping[str, Any]) -> Keyword:
    """Items of a ``set`` list, and the key fields of a ``map`` list's items, must be unique."""
    if list_type not in ("set", "map") or not isinstance(value, list):
        return
    seen: list[Any] = []
    for index, item in enumerate(value):
        identity = list_identity(item, node)
        if identity in seen:
            yield ValidationError(f"{DUPLICATE}: {render_value(identity)}", path=(index,))
        else:
            seen.append(identity)


def _properties(
    validator: Any, properties: Mapping[str, Any], value: Any, node: Mapping[str, Any]
) -> Keyword:
    if not isinstance(value, dict):
        return
    extra = node.get("additionalProperties")
    for key, child in value.items():
        schema = properties.get(key, extra if isinstance(extra, dict) else None)
        if schema is not None:
            yield from validator.descend(child, schema, path=key)
        elif not node.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
            yield ValidationError(f'unknown field "{_HERE}"', path=(key,))


def _additional_properties(validator: Any, extra: Any, value: Any, node: Mapping[str, Any]) -> Keyword:
    if isinstance(value, dict) and isinstance(extra, dict) and "properties" not in node:
        for key, child in value.items():
            yield from validator.descend(child, extra, path=key)


def _items(validator: Any, items: Any, value: Any, _: Any) -> Keyword:
    if isinstance(value, list) and isinstance(items, dict):
        for index, item in enumerate(value):
            yield from validator.descend(item, items, path=index)


_Validator = jsonschema.validators.create(
    meta_schema=Draft4Validator.META_SCHEMA,
    validators={
        "type": _type,
        "anyOf": _any_of,
        "required": _required,
        "enum": _enum,
        "pattern": _pattern,
        "format": _format,
        "minimum": _minimum,
        "maximum": _maximum,
        "maxLength": _max_length,
        "minLength": _min_length,
        "maxItems": _max_items,
        "minItems": _min_items,
        "properties": _properties,
        "additionalProperties": _additional_properties,
        "items": _items,
        "x-kubernetes-validations": _cel_rules,
        "x-kubernetes-list-type": _list_type,
    },
)


# --- defaults ------------------------------------------------------------------------------------------------


@cache
def _schema(kind: str, version: str) -> dict[str, Any]:
    return crd.schema(kind, version)


def _body_schema(kind: str, version: str) -> dict[str, Any]:
    schema = _schema(kind, version)
    return {
        **schema,
        "properties": {k: v for k, v in schema.get("properties", {}).items() if k not in ROOT_OWNED},
    }


def defaulted(obj: Mapping[str, Any], kind: str, version: str = "v1") -> dict[str, Any]:
    """A copy of `obj` with the CRD schema's defaults applied, as the API server stores it."""
    result = copy.deepcopy(dict(obj))
    apply_defaults(result, _schema(kind, version))
    return result


def _path(error: ValidationError) -> str:
    path = ""
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def check(obj: Mapping[str, Any], kind: str, version: str = "v1") -> list[FieldError]:
    """The schema errors of `obj` (a JSON-shaped ray.io object of `kind`, written at `version`) after
    defaulting; `KeyError` for a kind or version that ray.io does not serve."""
    body = {k: v for k, v in defaulted(obj, kind, version).items() if k not in ROOT_OWNED}
    return errors_against(body, _body_schema(kind, version))


def errors_against(value: Any, schema: Mapping[str, Any]) -> list[FieldError]:
    """The errors of a (defaulted) value against a structural schema, paths relative to the value."""
    errors = []
    for error in _Validator(schema).iter_errors(value):
        path = _path(error) or "<nil>"
        errors.append(FieldError(path, error.message.replace(_HERE, path)))
    return errors
