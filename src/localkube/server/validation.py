"""Validation of the metadata every object carries (names, generateName, labels and annotations), and
the unknown fields of built-in kinds that `fieldValidation=Strict` refuses.

The messages are apimachinery's (`metadata.name: Invalid value: "A_b": a lowercase RFC 1123 subdomain ...`),
returned as admission `FieldError`s so they join the schema's causes in one 422. Which name rule applies
depends on the kind, as on a real server: namespaces are RFC 1123 labels, services RFC 1035 labels, RBAC
objects path segments, everything else RFC 1123 subdomains.
"""

from __future__ import annotations

import re
from typing import Any

from localkube.admission import builtin
from localkube.admission.errors import INVALID, REQUIRED, TOO_LONG, FieldError

_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_SUBDOMAIN_TEXT = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_TEXT = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_TEXT = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_QUALIFIED_NAME_TEXT = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_TEXT = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_ANNOTATIONS_LIMIT = 256 * 1024

_LABEL_NAMED = frozenset({"Namespace"})
_DNS1035_NAMED = frozenset({"Service"})
_PATH_SEGMENT_NAMED = frozenset({"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})


def name_problems(kind: str, name: str) -> list[str]:
    """Why `name` is not a valid name for an object of `kind` (empty when it is)."""
    if kind in _PATH_SEGMENT_NAMED:
        return _path_segment_problems(name)
    if kind in _LABEL_NAMED:
        pattern, text, limit = _LABEL_RE, _LABEL_TEXT, 63
    elif kind in _DNS1035_NAMED:
        pattern, text, limit = _DNS1035_RE, _DNS1035_TEXT, 63
    else:
        pattern, text, limit = _SUBDOMAIN_RE, _SUBDOMAIN_TEXT, 253
    problems = [f"must be no more than {limit} characters"] if len(name) > limit else []
    if not pattern.match(name):
        problems.append(text)
    return problems


def _path_segment_problems(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{char}'" for char in "/%" if char in name]


def _qualified_name_problems(key: str) -> list[str]:
    prefix, _, name = key.rpartition("/")
    problems: list[str] = []
    if "/" in key and not prefix:
        problems.append("prefix part must be non-empty")
    elif prefix:
        if len(prefix) > 253:
            problems.append("prefix part must be no more than 253 characters")
        if not _SUBDOMAIN_RE.match(prefix):
            problems.append("prefix part " + _SUBDOMAIN_TEXT)
    if not name:
        problems.append("name part must be non-empty")
    else:
        if len(name) > 63:
            problems.append("name part must be no more than 63 characters")
        if not _QUALIFIED_NAME_RE.match(name):
            problems.append(_QUALIFIED_NAME_TEXT)
    return problems


def validate_metadata(kind: str, metadata: dict[str, Any], *, creating: bool) -> list[FieldError]:
    """The causes for refusing an object's metadata; empty when it is acceptable."""
    found: list[FieldError] = []
    name = metadata.get("name")
    if not name:
        if creating:
            found.append(FieldError("metadata.name", REQUIRED, detail="name or generateName is required"))
    elif not isinstance(name, str):
        found.append(FieldError("metadata.name", INVALID, name, "must be a string"))
    else:
        found += [
            FieldError("metadata.name", INVALID, name, problem) for problem in name_problems(kind, name)
        ]
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        found.append(FieldError("metadata.labels", INVALID, labels, "must be a map of strings"))
        labels = {}
    for key, value in labels.items():
        found += [
            FieldError("metadata.labels", INVALID, key, problem) for problem in _qualified_name_problems(key)
        ]
        if not isinstance(value, str):
            found.append(FieldError(f"metadata.labels.{key}", INVALID, value, "must be a string"))
            continue
        if len(value) > 63:
            found.append(FieldError("metadata.labels", INVALID, value, "must be no more than 63 characters"))
        if not _LABEL_VALUE_RE.match(value):
            found.append(FieldError("metadata.labels", INVALID, value, _LABEL_VALUE_TEXT))
    annotations = metadata.get("annotations") or {}
    if not isinstance(annotations, dict):
        found.append(FieldError("metadata.annotations", INVALID, annotations, "must be a map of strings"))
        annotations = {}
    total = 0
    for key, value in annotations.items():
        found += [
            FieldError("metadata.annotations", INVALID, key, problem)
            for problem in _qualified_name_problems(key.lower())
        ]
        total += len(key) + len(value if isinstance(value, str) else str(value))
    if total > _ANNOTATIONS_LIMIT:
        found.append(
            FieldError(
                "metadata.annotations", TOO_LONG, detail=f"must have at most {_ANNOTATIONS_LIMIT} bytes"
            )
        )
    return found


def unknown_builtin_fields(
    gvk: tuple[str, str, str], obj: dict[str, Any], *, drop: bool = False
) -> list[str]:
    """The paths of fields the official schema of a built-in kind does not have (`spec.containers[0].x`).

    With `drop`, the object is read as the API server's typed decoding reads it: those fields are removed,
    and so are the empty maps and lists of fields Go leaves out when empty (`omitempty`: those the schema
    does not list as required)."""
    found: list[str] = []
    shape = builtin.shape_for(gvk)
    if shape is not None:
        _walk_known(obj, shape, "", found, drop)
    return sorted(found)


def _walk_known(value: Any, shape: builtin.Shape, path: str, found: list[str], drop: bool) -> None:
    if isinstance(value, list):
        items = shape.items()
        if items is not None:
            for index, item in enumerate(value):
                if isinstance(item, dict | list):
                    _walk_known(item, items, f"{path}[{index}]", found, drop)
        return
    if not isinstance(value, dict):
        return
    known = shape.fields
    for key, child in list(value.items()) if drop else value.items():
        field = known.get(key) or shape.field(key)
        if field is None:
            found.append(f"{path}.{key}" if path else key)
            if drop:
                del value[key]
            continue
        child_shape, drops_empty = field
        if isinstance(child, dict | list):
            if child_shape is not None:
                _walk_known(child, child_shape, f"{path}.{key}" if path else key, found, drop)
            if drop and drops_empty and not child:
                del value[key]
