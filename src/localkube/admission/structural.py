"""The structural-schema rules a CRD version's `openAPIV3Schema` must meet before the API server accepts it.

Follows apiextensions-apiserver (Kubernetes 1.32): every specified node has a type (unless it is
int-or-string or preserves unknown fields), arrays have items, `properties` and `additionalProperties`
exclude each other, the root is an object whose `metadata` may only constrain `name` and `generateName`,
embedded resources are objects, value validations inside anyOf/allOf/oneOf/not carry no structure, the
list/map-type extensions are coherent, patterns compile and CEL rules compile. Paths are rendered as the
server renders them (`...properties[spec].type`); `path` is where the schema sits in the CRD.
"""

from __future__ import annotations

import re
from typing import Any, Final

from kubesemantics import cellib
from kubesemantics.schema import pattern, supported_values
from localkube.admission import errors
from localkube.admission.errors import FieldError

_TYPES: Final = ("array", "boolean", "integer", "number", "object", "string")
_UNSUPPORTED: Final = ("id", "additionalItems", "patternProperties", "definitions", "dependencies", "$ref")
_NESTED_FORBIDDEN: Final = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)
_INT_OR_STRING: Final = [{"type": "integer"}, {"type": "string"}]
_RULE_REASONS: Final = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)

ROOT, ITEM, FIELD = "root", "item", "field"


def structural_errors(
    schema: dict[str, Any], path: str = "spec.versions[0].schema.openAPIV3Schema"
) -> list[FieldError]:
    """Every way `schema` breaks the structural-schema rules, as field errors under `path`; empty if none."""
    found: list[FieldError] = []
    if not isinstance(schema, dict):
        return [FieldError(path, errors.REQUIRED, detail="must be an object")]
    if schema.get("nullable"):
        found.append(
            FieldError(f"{path}.nullable", errors.FORBIDDEN, detail="nullable cannot be true at the root")
        )
    _check_node(schema, ROOT, path, found)
    return found


def _check_node(node: Any, level: str, path: str, found: list[FieldError]) -> None:
    if not isinstance(node, dict):
        found.append(FieldError(path, errors.INVALID, node, "must be a schema object"))
        return
    kind = node.get("type")
    props: dict[str, Any] = node.get("properties") or {}
    extra = node.get("additionalProperties")
    embedded = bool(node.get("x-kubernetes-embedded-resource"))
    int_or_string = bool(node.get("x-kubernetes-int-or-string"))
    preserve = node.get("x-kubernetes-preserve-unknown-fields")

    _check_generic(node, path, found)
    if kind == "array" and "items" not in node:
        found.append(FieldError(f"{path}.items", errors.REQUIRED, detail="must be specified"))
    if isinstance(node.get("items"), dict):
        _check_node(node["items"], ITEM, f"{path}.items", found)
    elif isinstance(node.get("items"), list):
        found.append(
            FieldError(
                f"{path}.items", errors.FORBIDDEN, detail="items must be a schema object and not an array"
            )
        )
    for key, child in props.items():
        _check_node(child, FIELD, f"{path}.properties[{key}]", found)
    if extra is not None and extra is not False:
        if level == ROOT:
            found.append(
                FieldError(
                    f"{path}.additionalProperties", errors.FORBIDDEN, detail="must not be used at the root"
                )
            )
        if props:
            detail = "additionalProperties and properties are mutual exclusive"
            found.append(FieldError(f"{path}.additionalProperties", errors.FORBIDDEN, detail=detail))
        if isinstance(extra, dict):
            _check_node(extra, FIELD, f"{path}.additionalProperties", found)
    if preserve is False:
        found.append(
            FieldError(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                errors.INVALID,
                False,
                "must be true or undefined",
            )
        )
    if int_or_string and preserve:
        detail = "must be false if x-kubernetes-int-or-string is true"
        found.append(FieldError(f"{path}.x-kubernetes-preserve-unknown-fields", errors.INVALID, True, detail))
    if int_or_string and embedded:
        detail = "must be false if x-kubernetes-int-or-string is true"
        found.append(FieldError(f"{path}.x-kubernetes-embedded-resource", errors.INVALID, True, detail))

    skip_any_of = node.get("anyOf") == _INT_OR_STRING
    all_of = node.get("allOf") or []
    skip_first_all_of = (
        bool(all_of) and isinstance(all_of[0], dict) and all_of[0].get("anyOf") == _INT_OR_STRING
    )
    _check_value_validation(node, skip_any_of, skip_first_all_of, path, found)

    if embedded and kind != "object":
        if not kind:
            found.append(
                FieldError(
                    f"{path}.type",
                    errors.REQUIRED,
                    detail="must be object if x-kubernetes-embedded-resource is true",
                )
            )
        else:
            found.append(
                FieldError(
                    f"{path}.type",
                    errors.INVALID,
                    kind,
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
    elif not kind and not int_or_string and not preserve:
        detail = {
            ROOT: "must not be empty at the root",
            ITEM: "must not be empty for specified array items",
        }.get(level, "must not be empty for specified object fields")
        found.append(FieldError(f"{path}.type", errors.REQUIRED, detail=detail))
    if embedded and extra is not None:
        detail = "must not be used if x-kubernetes-embedded-resource is set"
        found.append(FieldError(f"{path}.additionalProperties", errors.FORBIDDEN, detail=detail))
    if level == ROOT and kind and kind != "object":
        found.append(FieldError(f"{path}.type", errors.INVALID, kind, "must be object at the root"))

    check_meta = level == ROOT or embedded
    for special in ("kind", "apiVersion"):
        if check_meta and special in props and props[special].get("type") != "string":
            found.append(
                FieldError(
                    f"{path}.properties[{special}].type",
                    errors.INVALID,
                    props[special].get("type", ""),
                    "must be string",
                )
            )
    if "metadata" in props:
        _check_metadata(props["metadata"], check_meta, level, f"{path}.properties[metadata]", found)
    if embedded and not preserve and not props:
        detail = "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
        found.append(FieldError(f"{path}.properties", errors.REQUIRED, detail=detail))
    _check_list_type(node, path, found)
    _check_rules(node, path, found)


def _check_generic(node: dict[str, Any], path: str, found: list[FieldError]) -> None:
    kind = node.get("type")
    if kind == "null":
        found.append(
            FieldError(
                f"{path}.type",
                errors.FORBIDDEN,
                detail="type cannot be set to null, use nullable as an alternative",
            )
        )
    elif kind is not None and kind not in _TYPES:
        found.append(FieldError(f"{path}.type", errors.UNSUPPORTED, kind, supported_values(_TYPES)))
    for key in _UNSUPPORTED:
        if key in node:
            found.append(FieldError(f"{path}.{key}", errors.FORBIDDEN, detail=f"{key} is not supported"))
    if node.get("uniqueItems"):
        detail = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        found.append(FieldError(f"{path}.uniqueItems", errors.FORBIDDEN, detail=detail))
    if "pattern" in node:
        try:
            pattern(node["pattern"])
        except re.error as error:
            detail = f"must be a valid regular expression, but isn't: {error}"
            found.append(FieldError(f"{path}.pattern", errors.INVALID, node["pattern"], detail))


def _check_metadata(
    meta: dict[str, Any], check_meta: bool, level: str, path: str, found: list[FieldError]
) -> None:
    if check_meta and meta.get("type") != "object":
        found.append(FieldError(f"{path}.type", errors.INVALID, meta.get("type", ""), "must be object"))
    if level != ROOT:
        return
    allowed = {"type", "properties", "default"}  # as the API server compares: nothing else may be set
    props = meta.get("properties") or {}
    if set(meta) - allowed or set(props) - {"name", "generateName"}:
        detail = (
            "must not specify anything other than name and generateName, but metadata is implicitly specified"
        )
        found.append(FieldError(path, errors.FORBIDDEN, detail=detail))


def _check_value_validation(
    node: dict[str, Any], skip_any_of: bool, skip_first_all_of: bool, path: str, found: list[FieldError]
) -> None:
    for keyword in ("anyOf", "allOf", "oneOf"):
        for index, branch in enumerate(node.get(keyword) or []):
            if (keyword == "anyOf" and skip_any_of) or (
                keyword == "allOf" and index == 0 and skip_first_all_of
            ):
                continue
            _check_nested(branch, f"{path}.{keyword}[{index}]", found)
    if isinstance(node.get("not"), dict):
        _check_nested(node["not"], f"{path}.not", found)


def _check_nested(node: Any, path: str, found: list[FieldError]) -> None:
    if not isinstance(node, dict):
        return
    for key, detail in _NESTED_FORBIDDEN:
        if node.get(key):
            found.append(FieldError(f"{path}.{key}", errors.FORBIDDEN, detail=detail))
    if "metadata" in (node.get("properties") or {}):
        found.append(
            FieldError(
                f"{path}.properties[metadata]",
                errors.FORBIDDEN,
                detail="must not be specified in a nested context",
            )
        )
    for key, child in (node.get("properties") or {}).items():
        _check_nested(child, f"{path}.properties[{key}]", found)
    if isinstance(node.get("items"), dict):
        _check_nested(node["items"], f"{path}.items", found)
    _check_value_validation(node, False, False, path, found)


def _check_list_type(node: dict[str, Any], path: str, found: list[FieldError]) -> None:
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys")
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None:
        if node.get("type") != "object":
            found.append(
                FieldError(
                    f"{path}.type",
                    errors.INVALID,
                    node.get("type", ""),
                    "must be object if x-kubernetes-map-type is specified",
                )
            )
        if map_type not in ("atomic", "granular"):
            found.append(
                FieldError(
                    f"{path}.x-kubernetes-map-type",
                    errors.UNSUPPORTED,
                    map_type,
                    supported_values(("atomic", "granular")),
                )
            )
    if list_type is not None:
        if node.get("type") != "array":
            found.append(
                FieldError(
                    f"{path}.type",
                    errors.INVALID,
                    node.get("type", ""),
                    "must be array if x-kubernetes-list-type is specified",
                )
            )
        if list_type not in ("atomic", "set", "map"):
            found.append(
                FieldError(
                    f"{path}.x-kubernetes-list-type",
                    errors.UNSUPPORTED,
                    list_type,
                    supported_values(("atomic", "set", "map")),
                )
            )
    if keys and list_type != "map":
        found.append(
            FieldError(
                f"{path}.x-kubernetes-list-type",
                errors.INVALID,
                list_type or "",
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )
        )
    if list_type == "map":
        items = node.get("items")
        if not keys:
            found.append(
                FieldError(
                    f"{path}.x-kubernetes-list-map-keys",
                    errors.REQUIRED,
                    detail="must not be empty if x-kubernetes-list-type is map",
                )
            )
        if not isinstance(items, dict):
            found.append(
                FieldError(
                    f"{path}.items",
                    errors.REQUIRED,
                    detail="must have a schema if x-kubernetes-list-type is map",
                )
            )
        elif items.get("type") != "object":
            found.append(
                FieldError(
                    f"{path}.items.type",
                    errors.INVALID,
                    items.get("type", ""),
                    "must be object if parent array's x-kubernetes-list-type is map",
                )
            )
        elif keys:
            item_props = items.get("properties") or {}
            if any(key not in item_props for key in keys):
                found.append(
                    FieldError(
                        f"{path}.x-kubernetes-list-map-keys",
                        errors.INVALID,
                        keys,
                        "entries must all be names of item properties",
                    )
                )
            if len(set(keys)) != len(keys):
                found.append(
                    FieldError(
                        f"{path}.x-kubernetes-list-map-keys",
                        errors.INVALID,
                        keys,
                        "must not contain duplicate entries",
                    )
                )
    if list_type == "set" and isinstance(node.get("items"), dict):
        items = node["items"]
        if (
            items.get("x-kubernetes-list-type", "atomic") != "atomic"
            or items.get("x-kubernetes-map-type", "atomic") != "atomic"
        ):
            found.append(
                FieldError(
                    f"{path}.items.x-kubernetes-list-type",
                    errors.INVALID,
                    items.get("x-kubernetes-list-type", ""),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                )
            )


def _check_rules(node: dict[str, Any], path: str, found: list[FieldError]) -> None:
    for index, rule in enumerate(node.get("x-kubernetes-validations") or []):
        rule_path = f"{path}.x-kubernetes-validations[{index}]"
        expression = rule.get("rule")
        if not expression:
            found.append(FieldError(f"{rule_path}.rule", errors.REQUIRED, detail="rule is not specified"))
            continue
        if "message" in rule and not str(rule["message"]).strip():
            found.append(
                FieldError(
                    f"{rule_path}.message",
                    errors.INVALID,
                    rule["message"],
                    "message must be non-empty if specified",
                )
            )
        if "\n" in str(rule.get("message", "")):
            found.append(
                FieldError(
                    f"{rule_path}.message",
                    errors.INVALID,
                    rule["message"],
                    "message must not contain line breaks",
                )
            )
        if "reason" in rule and rule["reason"] not in _RULE_REASONS:
            detail = supported_values(_RULE_REASONS)
            found.append(FieldError(f"{rule_path}.reason", errors.UNSUPPORTED, rule["reason"], detail))
        for key in ("rule", "messageExpression"):
            if not rule.get(key):
                continue
            try:
                cellib.compile_rule(str(rule[key]))
            except ValueError as error:
                found.append(
                    FieldError(f"{rule_path}.{key}", errors.INVALID, rule, f"compilation failed: {error}")
                )
