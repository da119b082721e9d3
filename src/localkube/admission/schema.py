"""Admission of a custom object against its CRD version's structural schema, in the API server's order.

`admit(schema, obj, old)` copies the object, prunes unknown fields, applies defaults, validates the OpenAPI
value rules, embedded resources, the list-type uniqueness rules and the CEL rules, and returns the admitted
copy or raises `SchemaInvalid` with every cause. The input is never mutated. As in the API server, the CEL
rules do not run when a blocking error (wrong type, missing or unsupported value, too long, too many) was
found; a last cause then says that some rules were not checked.

The validation itself lives in `validation` (OpenAPI) and `rules` (CEL); this module owns the order, pruning,
defaulting, and the CRD-time checks (`check_structural`). The root's `apiVersion`, `kind` and `metadata`
belong to the API server, not to the schema, except for constraints on `metadata.name`/`generateName`.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesemantics.jsonvalue import ABSENT
from kubesemantics.schema import ROOT_OWNED, additional, apply_defaults
from localkube.admission import errors, rules, validation
from localkube.admission.errors import FieldError, SchemaInvalid
from localkube.admission.structural import structural_errors
from localkube.admission.validation import join

__all__ = ["SchemaInvalid", "admit", "check_structural", "unknown_fields"]

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
        found += [
            # kube-openapi names the default's own root "", which the API server's text keeps.
            FieldError(
                f"{default_path}.{e.path}" if e.path and e.path != "<nil>" else default_path,
                e.type,
                e.value,
                e.detail,
                e.reason,
            )
            for e in validation.validate(node["default"], node)
        ]
    for key, child in (node.get("properties") or {}).items():
        found += _default_errors(child, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        found += _default_errors(node.get(key), f"{path}.{key}")
    return found


def admit(
    schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None, dropped: list[str] | None = None
) -> dict[str, Any]:
    """The object pruned, defaulted and validated against `schema`; raises SchemaInvalid with every cause.
    The paths of the unknown fields pruned are added to `dropped` (for the Warn field validation)."""
    admitted = copy.deepcopy(obj)
    pruned = prune(admitted, schema, root=True)
    if dropped is not None:
        dropped += pruned
    apply_defaults(admitted, schema, root=True)
    old_root = ABSENT if old is None else old
    found = validation.validate_root(admitted, old_root, schema)
    found += validation.embedded_errors(admitted, schema)
    # On update, list-type duplicates are only refused when the old object had none (ratcheting); the old
    # object is only walked when the new one has some, as the API server does.
    duplicates = validation.list_type_errors(admitted, schema)
    if duplicates and (old is None or not validation.list_type_errors(old, schema)):
        found += duplicates
    if any(_blocks_rules(error) for error in found):
        if _has_rules(schema):
            found.append(FieldError("<nil>", errors.INVALID, None, UNCHECKED_RULES))
    else:
        found += rules.check_rules(admitted, old_root, schema)
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


# --- pruning -----------------------------------------------------------------------------------------------


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
    extra = additional(node)
    keeps_unknown = (
        bool(node.get("x-kubernetes-preserve-unknown-fields")) or node.get("additionalProperties") is True
    )
    embedded = root or bool(node.get("x-kubernetes-embedded-resource"))
    for key in list(value):
        child_path = join(path, key)
        if embedded and key in ROOT_OWNED:
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
