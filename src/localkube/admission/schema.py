"""Admission of a custom object against its CRD version's structural schema, in the API server's order.

`admit(schema, obj, old)` copies the object, prunes unknown fields, applies defaults, validates the OpenAPI
value rules, embedded resources, the list-type uniqueness rules and the CEL rules, and returns the admitted
copy or raises `SchemaInvalid` with every cause. The input is never mutated. As in the API server, the CEL
rules do not run when a blocking error (wrong type, missing or unsupported value, too long, too many) was
found; a last cause then says that some rules were not checked.

Messages follow kube-openapi and apiextensions-apiserver (Kubernetes 1.32): type, required, enum, pattern and
bound errors name the field twice (`spec.x: Invalid value: 7: spec.x in body should be ...`). OpenAPI errors
name map entries with a dot (`spec.labels.a`), CEL and list-type errors with brackets (`spec.labels[a]`), as
the real server does. Formats are validated as the API server validates them: the string formats it knows;
`int32`/`int64` are accepted without a range check, because the API server strips them from CRD schemas.
On update, a subtree equal to the old one is not re-validated (validation ratcheting, on by default since 1.30).
The root's `apiVersion`, `kind` and `metadata` belong to the API server, not to the schema.
"""

from __future__ import annotations

import copy
import ipaddress
import re
import uuid
from collections.abc import Callable
from datetime import date
from functools import lru_cache
from typing import Any

from localkube.admission import cellib, errors, rules
from localkube.admission.errors import FieldError, SchemaInvalid, render_number
from localkube.admission.jsonvalue import json_equal, json_type
from localkube.admission.structural import structural_errors

__all__ = ["SchemaInvalid", "admit", "check_structural", "unknown_fields"]

_ROOT_OWNED = ("apiVersion", "kind", "metadata")
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_ABSENT = rules.ABSENT


def check_structural(
    schema: dict[str, Any], path: str = "spec.versions[0].schema.openAPIV3Schema"
) -> list[FieldError]:
    """Every way a CRD version's schema is refused: the structural rules, then (for a structural schema)
    defaults that break the schema or carry unknown fields. Errors are named under `path`."""
    return structural_errors(schema, path) or _default_errors(schema, path, root=True)


def _default_errors(node: Any, path: str, *, root: bool = False) -> list[FieldError]:
    if not isinstance(node, dict):
        return []
    found: list[FieldError] = []
    if "default" in node and not root:
        default_path = f"{path}.default"
        if prune(copy.deepcopy(node["default"]), node):
            found.append(
                FieldError(default_path, errors.INVALID, node["default"], "must not have unknown fields")
            )
        problems: list[FieldError] = []
        _validate(node["default"], _ABSENT, node, "", problems)
        found += [
            # kube-openapi names the default's own root "", which the API server's text keeps.
            FieldError(
                f"{default_path}.{e.path}" if e.path and e.path != "<nil>" else default_path,
                e.type,
                e.value,
                e.detail,
                e.reason,
            )
            for e in problems
        ]
    for key, child in (node.get("properties") or {}).items():
        found += _default_errors(child, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        found += _default_errors(node.get(key), f"{path}.{key}")
    return found


def admit(schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """The object pruned, defaulted and validated against `schema`; raises SchemaInvalid with every cause."""
    admitted = copy.deepcopy(obj)
    prune(admitted, schema, root=True)
    default(admitted, schema, root=True)
    old_root = _ABSENT if old is None else old
    found: list[FieldError] = []
    _validate_object_root(admitted, old_root, schema, found)
    _check_embedded(admitted, schema, "", found)
    # On update, list-type duplicates are only checked when the old object had none (ratcheting).
    if old is None or not _list_type_errors(old, schema):
        _check_list_types(admitted, schema, "", found)
    if any(_blocks_rules(error) for error in found):
        if _has_rules(schema):
            found.append(FieldError("<nil>", errors.INVALID, None, UNCHECKED_RULES))
    else:
        _check_rules(admitted, old_root, schema, "<nil>", found, root=True)
    if found:
        raise SchemaInvalid(found)
    return admitted


UNCHECKED_RULES = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
_BLOCKING_TYPES = frozenset({errors.UNSUPPORTED, errors.REQUIRED, errors.TOO_LONG, errors.TOO_MANY})


def _blocks_rules(error: FieldError) -> bool:
    """Whether an error stops the CEL rules from running (wrong types, missing or unsupported values, sizes)."""
    return error.type in _BLOCKING_TYPES or error.cause_reason == "FieldValueTypeInvalid"


def _has_rules(node: Any) -> bool:
    if isinstance(node, dict):
        return bool(node.get("x-kubernetes-validations")) or any(_has_rules(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_rules(v) for v in node)
    return False


def _list_type_errors(obj: dict[str, Any], schema: dict[str, Any]) -> list[FieldError]:
    found: list[FieldError] = []
    _check_list_types(obj, schema, "", found)
    return found


# --- pruning -----------------------------------------------------------------------------------------------


def _additional(node: dict[str, Any]) -> dict[str, Any] | None:
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def prune(value: Any, node: dict[str, Any], *, root: bool = False, path: str = "") -> list[str]:
    """Drop, in place, the fields the schema does not know, honouring preserve-unknown-fields and embedding.

    Returns the dropped fields' paths, sorted, as the API server names them for `fieldValidation=Strict`
    (`spec.bogus`, `spec.groups[0].extra`); unknown fields of embedded metadata are dropped unreported."""
    dropped: list[str] = []
    _prune(value, node, root, path, dropped)
    return sorted(dropped)


def _prune(value: Any, node: dict[str, Any], root: bool, path: str, dropped: list[str]) -> None:
    if isinstance(value, list):
        items = node.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _prune(item, items, False, f"{path}[{index}]", dropped)
        return
    if not isinstance(value, dict) or node.get("x-kubernetes-int-or-string"):
        return
    props: dict[str, Any] = node.get("properties") or {}
    extra = _additional(node)
    keeps_unknown = (
        bool(node.get("x-kubernetes-preserve-unknown-fields")) or node.get("additionalProperties") is True
    )
    embedded = root or bool(node.get("x-kubernetes-embedded-resource"))
    for key in list(value):
        child_path = _join(path, key)
        if embedded and key in _ROOT_OWNED:
            if not root and key == "metadata" and isinstance(value[key], dict):
                for meta_key in [k for k in value[key] if k not in _OBJECT_META_FIELDS]:
                    del value[key][meta_key]
            continue
        if key in props:
            _prune(value[key], props[key], False, child_path, dropped)
        elif extra is not None:
            _prune(value[key], extra, False, child_path, dropped)
        elif not keeps_unknown:
            del value[key]
            dropped.append(child_path)


def unknown_fields(schema: dict[str, Any], obj: dict[str, Any]) -> list[str]:
    """The paths of the fields of `obj` that its schema does not know (what pruning would drop), sorted."""
    return prune(copy.deepcopy(obj), schema, root=True)


# --- defaulting --------------------------------------------------------------------------------------------


def _drops_null(node: dict[str, Any] | None) -> bool:
    return node is not None and not node.get("nullable")


def default(value: Any, node: dict[str, Any], *, root: bool = False) -> None:
    """Apply schema defaults in place, top-down, and drop nulls of non-nullable fields that have no default."""
    if isinstance(value, list):
        items = node.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                if item is None and _drops_null(items) and "default" in items:
                    value[index] = copy.deepcopy(items["default"])
                default(value[index], items)
        return
    if not isinstance(value, dict):
        return
    props: dict[str, Any] = node.get("properties") or {}
    for key, prop in props.items():
        if root and key in _ROOT_OWNED:
            continue
        present = key in value
        if present and value[key] is None and _drops_null(prop):
            del value[key]
            present = False
        if not present and "default" in prop:
            value[key] = copy.deepcopy(prop["default"])
    extra = _additional(node)
    for key in list(value):
        if root and key in _ROOT_OWNED:
            continue
        child = props.get(key, extra)
        if child is None:
            continue
        if value[key] is None and key not in props and _drops_null(child):
            if "default" in child:
                value[key] = copy.deepcopy(child["default"])
            else:
                del value[key]
                continue
        default(value[key], child)


# --- OpenAPI value validation ------------------------------------------------------------------------------


def _type_matches(value: Any, expected: list[str]) -> bool:
    actual = json_type(value)
    if actual in expected:
        return True
    if actual == "integer" and "number" in expected:
        return True
    return actual == "number" and "integer" in expected and float(value).is_integer()


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
    trimmed["properties"] = {k: v for k, v in props.items() if k not in _ROOT_OWNED}
    trimmed["required"] = [r for r in schema.get("required") or [] if r not in _ROOT_OWNED]
    name_rules = {
        k: v for k, v in ((props.get("metadata") or {}).get("properties") or {}).items() if k in _NAME_FIELDS
    }
    if name_rules:
        trimmed["properties"]["metadata"] = {"type": "object", "properties": name_rules}
    _validate(
        _root_body(value, name_rules),
        old if old is _ABSENT else _root_body(old, name_rules),
        trimmed,
        "",
        found,
    )


def _root_body(obj: dict[str, Any], name_rules: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k not in _ROOT_OWNED}
    metadata = obj.get("metadata") or {}
    names = {k: metadata[k] for k in name_rules if k in metadata}
    return {**body, "metadata": names} if names else body


def _join(name: str, key: str) -> str:
    return f"{name}.{key}" if name else key


def _validate(value: Any, old: Any, node: dict[str, Any], name: str, found: list[FieldError]) -> None:
    if old is not _ABSENT and json_equal(old, value):
        return
    expected = _expected_types(node)
    if value is None:
        if expected and "null" not in expected and not node.get("nullable"):
            detail = f'{_in_body(name)} must be of type {",".join(expected)}: "null"'
            found.append(FieldError(name, errors.INVALID, "null", detail, reason="FieldValueTypeInvalid"))
        return
    if expected and not _type_matches(value, expected):
        actual = json_type(value)
        detail = f'{_in_body(name)} must be of type {",".join(expected)}: "{actual}"'
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
        supported = [v if isinstance(v, str) else errors.render_value(v) for v in node["enum"]]
        detail = "supported values: " + ", ".join(errors.render_value(s) for s in supported)
        found.append(FieldError(name, errors.UNSUPPORTED, value, detail))
    if isinstance(value, dict):
        _validate_properties(value, old, node, name, found)


def _branch_errors(value: Any, branch: dict[str, Any], name: str) -> list[FieldError]:
    branch_found: list[FieldError] = []
    _validate(value, _ABSENT, branch, name, branch_found)
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


@lru_cache(maxsize=1024)
def _pattern(pattern: str) -> re.Pattern[str]:
    """A Go (RE2) pattern as a Python one: `$` and `\\z` end the text (Python's `$` also matches before a
    final newline), and the character classes are ASCII, as in RE2."""
    translated = re.sub(r"(?<!\\)\$$", r"\\Z", pattern).replace(r"\z", r"\Z")
    return re.compile(translated, re.ASCII)


def _validate_string(value: str, node: dict[str, Any], name: str, found: list[FieldError]) -> None:
    length = len(value)
    if "maxLength" in node and length > node["maxLength"]:
        found.append(
            FieldError(name, errors.TOO_LONG, detail=f"may not be more than {node['maxLength']} bytes")
        )
    if "minLength" in node and length < node["minLength"]:
        detail = f"{_in_body(name)} should be at least {node['minLength']} chars long"
        found.append(FieldError(name, errors.INVALID, value, detail))
    if "pattern" in node and not _pattern(node["pattern"]).search(value):
        detail = f"{_in_body(name)} should match '{node['pattern']}'"
        found.append(FieldError(name, errors.INVALID, value, detail))
    checker = _FORMATS.get(str(node.get("format", "")).replace("-", ""))
    if checker is not None and not checker(value):
        detail = f"{_in_body(name)} must be of type {node['format']}: {errors.render_value(value)}"
        found.append(FieldError(name, errors.INVALID, value, detail, reason="FieldValueTypeInvalid"))


def _validate_number(value: float, node: dict[str, Any], name: str, found: list[FieldError]) -> None:
    def fail(message: str, bound: float) -> None:
        detail = f"{_in_body(name)} should be {message} {render_number(bound)}"
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
        olds = _correlate_items(value, old, node)
        for index, item in enumerate(value):
            _validate(item, olds[index], items, f"{name}[{index}]", found)
    if "minItems" in node and len(value) < node["minItems"]:
        detail = f"{_in_body(name)} should have at least {node['minItems']} items"
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
    extra = _additional(node)
    old_map = old if isinstance(old, dict) else {}
    if extra is not None:
        for key, child in value.items():
            if key not in props:
                _validate(child, old_map.get(key, _ABSENT), extra, _join(name, key), found)
    for key, child_node in props.items():
        if key in value:
            _validate(value[key], old_map.get(key, _ABSENT), child_node, _join(name, key), found)
    for required in node.get("required") or []:
        if required not in value:
            found.append(FieldError(_join(name, required), errors.REQUIRED))


def _correlate_items(value: list[Any], old: Any, node: dict[str, Any]) -> list[Any]:
    """The old item each new item corresponds to: by key in map-type lists, none in other lists."""
    keys = node.get("x-kubernetes-list-map-keys")
    if node.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return [_ABSENT] * len(value)
    by_key = {_map_key(item, keys): item for item in old if isinstance(item, dict)}
    return [
        by_key.get(_map_key(item, keys), _ABSENT) if isinstance(item, dict) else _ABSENT for item in value
    ]


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
    "datetime": _parses(cellib.parse_timestamp),
    "date": _parses(date.fromisoformat),
    "byte": _parses(cellib.parse_bytes),
    "uuid": _parses(uuid.UUID),
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(lambda text: ipaddress.ip_network(text, strict=False)),
    "duration": _parses(cellib.parse_duration),
    "hostname": lambda text: bool(_HOSTNAME.match(text)),
    "email": lambda text: bool(re.fullmatch(r"[^@\s]+@[^@\s]+", text)),
}


# --- embedded resources and list types (after the OpenAPI pass, with field.Path names) ---------------------


def _check_embedded(value: Any, node: dict[str, Any], path: str, found: list[FieldError]) -> None:
    if isinstance(value, dict):
        if node.get("x-kubernetes-embedded-resource"):
            for key in ("apiVersion", "kind"):
                child = _field_child(path, key)
                if key not in value:
                    found.append(FieldError(child, errors.REQUIRED, detail="must not be empty"))
                elif not isinstance(value[key], str):
                    found.append(FieldError(child, errors.INVALID, value[key], "must be a string"))
                elif not value[key]:
                    found.append(FieldError(child, errors.INVALID, "", "must not be empty"))
        props: dict[str, Any] = node.get("properties") or {}
        extra = _additional(node)
        for key, child_value in value.items():
            if key in props:
                _check_embedded(child_value, props[key], _field_child(path, key), found)
            elif extra is not None:
                _check_embedded(child_value, extra, f"{path}[{key}]", found)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            _check_embedded(item, node["items"], f"{path}[{index}]", found)


def _field_child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_list_types(value: Any, node: dict[str, Any], path: str, found: list[FieldError]) -> None:
    if isinstance(value, dict):
        props: dict[str, Any] = node.get("properties") or {}
        extra = _additional(node)
        for key, child in value.items():
            if key in props:
                _check_list_types(child, props[key], _field_child(path, key), found)
            elif extra is not None:
                _check_list_types(child, extra, f"{path}[{key}]", found)
    elif isinstance(value, list):
        list_type = node.get("x-kubernetes-list-type")
        keys = node.get("x-kubernetes-list-map-keys") or []
        seen: list[Any] = []
        for index, item in enumerate(value):
            identity = (
                {k: item.get(k) for k in keys if k in item}
                if list_type == "map" and isinstance(item, dict)
                else item
            )
            if list_type in ("set", "map"):
                if _seen(identity, seen):
                    found.append(FieldError(f"{path}[{index}]", errors.DUPLICATE, identity))
                else:
                    seen.append(identity)
        items = node.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _check_list_types(item, items, f"{path}[{index}]", found)


# --- CEL rules ---------------------------------------------------------------------------------------------


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
            value_seen, old_seen = _root_view(value), old if old is _ABSENT else _root_view(old)
            found.extend(rules.evaluate_rules(value_seen, old_seen, node, path))
        else:
            found.extend(rules.evaluate_rules(value, old, node, path))
    base = "" if path == "<nil>" else path
    if isinstance(value, dict):
        props: dict[str, Any] = node.get("properties") or {}
        extra = _additional(node)
        old_map = old if isinstance(old, dict) else {}
        for key, child in value.items():
            if root and key in _ROOT_OWNED:
                continue
            old_child = old_map.get(key, _ABSENT)
            if key in props:
                _check_rules(child, old_child, props[key], _field_child(base, key), found)
            elif extra is not None:
                _check_rules(child, old_child, extra, f"{base}[{key}]", found)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        olds = _correlate_items(value, old, node)
        for index, item in enumerate(value):
            _check_rules(item, olds[index], node["items"], f"{base}[{index}]", found)
