"""OpenAPI validation of custom objects, in kube-openapi's and apiextensions-apiserver's words (Kubernetes 1.32).

Type, required, enum, pattern and bound errors name the field twice (`spec.x: Invalid value: 7: spec.x in
body should be ...`), in kube-openapi's order (a node's type, compositions, string/number/array rules, enum,
then an object's map values, properties and required fields). These errors name map entries with a dot
(`spec.labels.a`); embedded-resource and list-type errors name them with brackets (`spec.labels[a]`), as the
real server does. Formats are the string formats the API server knows; `int32`/`int64` have no range check,
because the API server strips them from CRD schemas. On update, a subtree equal to its old value is not
validated again (validation ratcheting, on by default since 1.30). Patterns are read as RE2 reads them.
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from collections.abc import Callable
from datetime import date
from typing import Any

from kubesemantics import cellib, goparse
from kubesemantics.jsonvalue import ABSENT, has_json_type, json_equal, json_type
from kubesemantics.schema import (
    ROOT_OWNED,
    additional,
    bound_detail,
    format_detail,
    is_date_time,
    list_identity,
    max_length_detail,
    min_items_detail,
    min_length_detail,
    pattern,
    pattern_detail,
    supported_values,
    type_detail,
)
from localkube.admission import errors
from localkube.admission.errors import FieldError


def join(name: str, key: str) -> str:
    """A child's name: `spec.x`, or `x` at the root."""
    return f"{name}.{key}" if name else key


def validate_root(value: dict[str, Any], old: Any, schema: dict[str, Any]) -> list[FieldError]:
    """The OpenAPI errors of an object (old: its previous version, or ABSENT)."""
    found: list[FieldError] = []
    _validate_object_root(value, old, schema, found)
    return found


def validate(value: Any, node: dict[str, Any]) -> list[FieldError]:
    """The OpenAPI errors of a value against one schema node, named from an empty root."""
    found: list[FieldError] = []
    _validate(value, ABSENT, node, "", found)
    return found


def embedded_errors(obj: dict[str, Any], schema: dict[str, Any]) -> list[FieldError]:
    """Embedded resources without an apiVersion or kind."""
    found: list[FieldError] = []
    _check_embedded(obj, schema, "", found)
    return found


def list_type_errors(obj: dict[str, Any], schema: dict[str, Any]) -> list[FieldError]:
    """Duplicates in `x-kubernetes-list-type: set|map` lists."""
    found: list[FieldError] = []
    _check_list_types(obj, schema, "", found)
    return found


def _expected_types(node: dict[str, Any]) -> list[str]:
    if node.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    kind = node.get("type")
    if isinstance(kind, list):
        return [str(k) for k in kind]
    return [kind] if kind else []


def _in_body(name: str) -> str:
    return f"{name} in body"


_NAME_FIELDS = ("name", "generateName")


def _validate_object_root(
    value: dict[str, Any], old: Any, schema: dict[str, Any], found: list[FieldError]
) -> None:
    # The root's apiVersion/kind/metadata are the API server's, except the constraints a schema may put on
    # metadata.name and metadata.generateName; validate the rest as an object node.
    trimmed = {k: v for k, v in schema.items() if k not in ("properties", "required")}
    props = schema.get("properties") or {}
    trimmed["properties"] = {k: v for k, v in props.items() if k not in ROOT_OWNED}
    trimmed["required"] = [r for r in schema.get("required") or [] if r not in ROOT_OWNED]
    name_rules = {
        k: v for k, v in ((props.get("metadata") or {}).get("properties") or {}).items() if k in _NAME_FIELDS
    }
    if name_rules:
        trimmed["properties"]["metadata"] = {"type": "object", "properties": name_rules}
    _validate(
        _root_body(value, name_rules),
        old if old is ABSENT else _root_body(old, name_rules),
        trimmed,
        "",
        found,
    )


def _root_body(obj: dict[str, Any], name_rules: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k not in ROOT_OWNED}
    metadata = obj.get("metadata") or {}
    names = {k: metadata[k] for k in name_rules if k in metadata}
    return {**body, "metadata": names} if names else body


def _validate(value: Any, old: Any, node: dict[str, Any], name: str, found: list[FieldError]) -> None:
    if old is not ABSENT and json_equal(old, value):
        return
    expected = _expected_types(node)
    if value is None:
        if expected and "null" not in expected and not node.get("nullable"):
            detail = type_detail(name, expected, "null")
            found.append(FieldError(name, errors.INVALID, "null", detail, reason="FieldValueTypeInvalid"))
        return
    if expected and not any(has_json_type(value, kind) for kind in expected):
        actual = json_type(value)
        detail = type_detail(name, expected, actual)
        found.append(FieldError(name, errors.INVALID, actual, detail, reason="FieldValueTypeInvalid"))
    # As in kube-openapi, a type error does not stop the other validators that apply to the value's kind.
    _validate_composition(value, node, name, found)
    if isinstance(value, str):
        _validate_string(value, node, name, found)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(value, node, name, found)
    elif isinstance(value, list):
        _validate_array(value, old, node, name, found)
    if "enum" in node and not any(json_equal(value, allowed) for allowed in node["enum"]):
        found.append(FieldError(name, errors.UNSUPPORTED, value, supported_values(node["enum"])))
    if isinstance(value, dict):
        _validate_properties(value, old, node, name, found)


def _branch_errors(value: Any, branch: dict[str, Any], name: str) -> list[FieldError]:
    branch_found: list[FieldError] = []
    _validate(value, ABSENT, branch, name, branch_found)
    return branch_found


def _validate_composition(value: Any, node: dict[str, Any], name: str, found: list[FieldError]) -> None:
    # Composite failures carry no field path in the real server (it reports them against the nil root path).
    if node.get("anyOf"):
        results = [_branch_errors(value, branch, name) for branch in node["anyOf"]]
        if all(results):
            detail = f'"{name}" must validate at least one schema (anyOf)'
            found.append(FieldError("<nil>", errors.INVALID, "", detail))
            found.extend(results[0])
    if node.get("oneOf"):
        results = [_branch_errors(value, branch, name) for branch in node["oneOf"]]
        valid = sum(1 for result in results if not result)
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            detail = f'"{name}" must validate one and only one schema (oneOf). {extra}'
            found.append(FieldError("<nil>", errors.INVALID, "", detail))
    for branch in node.get("allOf") or []:
        found.extend(_branch_errors(value, branch, name))
    if isinstance(node.get("not"), dict) and not _branch_errors(value, node["not"], name):
        found.append(FieldError("<nil>", errors.INVALID, "", f'"{name}" must not validate the schema (not)'))


def _validate_string(value: str, node: dict[str, Any], name: str, found: list[FieldError]) -> None:
    length = len(value)
    if "maxLength" in node and length > node["maxLength"]:
        found.append(FieldError(name, errors.TOO_LONG, detail=max_length_detail(node["maxLength"])))
    if "minLength" in node and length < node["minLength"]:
        detail = min_length_detail(name, node["minLength"])
        found.append(FieldError(name, errors.INVALID, value, detail))
    if "pattern" in node and not pattern(node["pattern"]).search(value):
        detail = pattern_detail(name, node["pattern"])
        found.append(FieldError(name, errors.INVALID, value, detail))
    checker = _FORMATS.get(str(node.get("format", "")).replace("-", ""))
    if checker is not None and not checker(value):
        detail = format_detail(name, node["format"], value)
        found.append(FieldError(name, errors.INVALID, value, detail, reason="FieldValueTypeInvalid"))


def _validate_number(value: float, node: dict[str, Any], name: str, found: list[FieldError]) -> None:
    def fail(message: str, bound: float) -> None:
        detail = bound_detail(name, message, bound)
        found.append(FieldError(name, errors.INVALID, value, detail))

    factor = node.get("multipleOf")
    if factor and (value / factor) != int(value / factor):
        fail("a multiple of", factor)
    if "maximum" in node:
        if node.get("exclusiveMaximum") and value >= node["maximum"]:
            fail("less than", node["maximum"])
        elif value > node["maximum"]:
            fail("less than or equal to", node["maximum"])
    if "minimum" in node:
        if node.get("exclusiveMinimum") and value <= node["minimum"]:
            fail("greater than", node["minimum"])
        elif value < node["minimum"]:
            fail("greater than or equal to", node["minimum"])


def _validate_array(
    value: list[Any], old: Any, node: dict[str, Any], name: str, found: list[FieldError]
) -> None:
    # kube-openapi's order: the items, then minItems, maxItems and uniqueItems.
    items = node.get("items")
    if isinstance(items, dict):
        olds = correlate_items(value, old, node)
        for index, item in enumerate(value):
            _validate(item, olds[index], items, f"{name}[{index}]", found)
    if "minItems" in node and len(value) < node["minItems"]:
        detail = min_items_detail(name, node["minItems"])
        found.append(FieldError(name, errors.INVALID, len(value), detail))
    if "maxItems" in node and len(value) > node["maxItems"]:
        detail = f"must have at most {node['maxItems']} items"  # Kubernetes 1.32 has no singular here
        found.append(FieldError(name, errors.TOO_MANY, len(value), detail))
    if node.get("uniqueItems") and any(_seen(value[i], value[:i]) for i in range(len(value))):
        found.append(FieldError(name, errors.INVALID, "", f"{_in_body(name)} shouldn't contain duplicates"))


def _seen(value: Any, earlier: list[Any]) -> bool:
    return any(json_equal(value, other) for other in earlier)


def _validate_properties(
    value: dict[str, Any], old: Any, node: dict[str, Any], name: str, found: list[FieldError]
) -> None:
    # kube-openapi's order: property counts, map values, declared properties, then the required ones.
    if "minProperties" in node and len(value) < node["minProperties"]:
        detail = f"{_in_body(name)} should have at least {node['minProperties']} properties"
        found.append(FieldError(name, errors.INVALID, len(value), detail))
    if "maxProperties" in node and len(value) > node["maxProperties"]:
        detail = f"must have at most {node['maxProperties']} items"
        found.append(FieldError(name, errors.TOO_MANY, len(value), detail))
    props: dict[str, Any] = node.get("properties") or {}
    extra = additional(node)
    old_map = old if isinstance(old, dict) else {}
    if extra is not None:
        for key, child in value.items():
            if key not in props:
                _validate(child, old_map.get(key, ABSENT), extra, join(name, key), found)
    for key, child_node in props.items():
        if key in value:
            _validate(value[key], old_map.get(key, ABSENT), child_node, join(name, key), found)
    for required in node.get("required") or []:
        if required not in value:
            found.append(FieldError(join(name, required), errors.REQUIRED))


def correlate_items(value: list[Any], old: Any, node: dict[str, Any]) -> list[Any]:
    """The old item each new item corresponds to: by key in map-type lists, none in other lists."""
    keys = node.get("x-kubernetes-list-map-keys")
    if node.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return [ABSENT] * len(value)
    by_key = {_map_key(item, keys): item for item in old if isinstance(item, dict)}
    return [by_key.get(_map_key(item, keys), ABSENT) if isinstance(item, dict) else ABSENT for item in value]


def _map_key(item: dict[str, Any], keys: list[str]) -> tuple[Any, ...]:
    return tuple(repr(item.get(key)) for key in keys)


# --- formats -----------------------------------------------------------------------------------------------


def _parses(parse: Callable[[str], object]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            parse(text)
        except ValueError:
            return False
        return True

    return check


_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_FORMATS: dict[str, Callable[[str], bool]] = {
    "datetime": is_date_time,
    "date": _parses(date.fromisoformat),
    "byte": _parses(cellib.parse_bytes),
    "uuid": _parses(uuid.UUID),
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(lambda text: ipaddress.ip_network(text, strict=False)),
    "duration": _parses(goparse.to_timedelta),
    "hostname": lambda text: bool(_HOSTNAME.match(text)),
    "email": lambda text: bool(re.fullmatch(r"[^@\s]+@[^@\s]+", text)),
}


# --- embedded resources and list types (after the OpenAPI pass, with field.Path names) ---------------------


def _check_embedded(value: Any, node: dict[str, Any], path: str, found: list[FieldError]) -> None:
    if isinstance(value, dict):
        if node.get("x-kubernetes-embedded-resource"):
            for key in ("apiVersion", "kind"):
                child = field_child(path, key)
                if key not in value:
                    found.append(FieldError(child, errors.REQUIRED, detail="must not be empty"))
                elif not isinstance(value[key], str):
                    found.append(FieldError(child, errors.INVALID, value[key], "must be a string"))
                elif not value[key]:
                    found.append(FieldError(child, errors.INVALID, "", "must not be empty"))
        props: dict[str, Any] = node.get("properties") or {}
        extra = additional(node)
        for key, child_value in value.items():
            if key in props:
                _check_embedded(child_value, props[key], field_child(path, key), found)
            elif extra is not None:
                _check_embedded(child_value, extra, f"{path}[{key}]", found)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            _check_embedded(item, node["items"], f"{path}[{index}]", found)


def field_child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_list_types(value: Any, node: dict[str, Any], path: str, found: list[FieldError]) -> None:
    if isinstance(value, dict):
        props: dict[str, Any] = node.get("properties") or {}
        extra = additional(node)
        for key, child in value.items():
            if key in props:
                _check_list_types(child, props[key], field_child(path, key), found)
            elif extra is not None:
                _check_list_types(child, extra, f"{path}[{key}]", found)
    elif isinstance(value, list):
        list_type = node.get("x-kubernetes-list-type")
        seen: list[Any] = []
        for index, item in enumerate(value):
            identity = list_identity(item, node)
            if list_type in ("set", "map"):
                if _seen(identity, seen):
                    found.append(FieldError(f"{path}[{index}]", errors.DUPLICATE, identity))
                else:
                    seen.append(identity)
        items = node.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _check_list_types(item, items, f"{path}[{index}]", found)
