"""The official schemas of Kubernetes' built-in kinds, from kubernetes-validate's packaged JSON schemas.

One Kubernetes minor (1.32, kubectl's) is served. Definitions are loaded once, lazily, and never mutated;
references stay as `{"$ref": "#/$defs/<name>"}` (some types are recursive) and `resolve` follows them.
The definitions keep the patch extensions (`x-kubernetes-patch-merge-key`, `x-kubernetes-patch-strategy`,
`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`) that strategic merge and server-side apply need.
Types are JSON-schema style: `type` may be a list such as `["string", "null"]`.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Final

KUBERNETES_VERSION: Final = "1.32.0"
_REF_PREFIX: Final = "#/$defs/"


@lru_cache(maxsize=1)
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition by its OpenAPI name (`io.k8s.api.core.v1.Pod`)."""
    folder = (
        resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{KUBERNETES_VERSION}-local"
    )
    document = json.loads((folder / "_definitions.json").read_text())
    found: dict[str, dict[str, Any]] = document["$defs"]
    return found


@lru_cache(maxsize=1)
def _names_by_gvk() -> dict[tuple[str, str, str], str]:
    names: dict[tuple[str, str, str], str] = {}
    for name, definition in definitions().items():
        for gvk in definition.get("x-kubernetes-group-version-kind") or []:
            key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
            # Shared types (DeleteOptions, WatchEvent) list every group; a kind's own definition wins.
            if key not in names or name.endswith("." + key[2]):
                names[key] = name
    return names


def definition_name(gvk: tuple[str, str, str]) -> str | None:
    """The definition name of a (group, version, kind), or None when it is not a built-in kind."""
    return _names_by_gvk().get(gvk)


def schema_for(gvk: tuple[str, str, str]) -> dict[str, Any] | None:
    """The official schema of a built-in (group, version, kind), or None when it is not a built-in kind."""
    name = definition_name(gvk)
    return definitions()[name] if name else None


def resolve(node: dict[str, Any] | None) -> dict[str, Any] | None:
    """`node` with its `$ref` followed (repeatedly); other nodes are returned as they are."""
    while node is not None and "$ref" in node:
        ref = str(node["$ref"])
        node = definitions().get(ref.removeprefix(_REF_PREFIX)) if ref.startswith(_REF_PREFIX) else None
    return node


def property_schema(node: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """The resolved schema of a property (or map value) of an object node; None when unknown."""
    node = resolve(node)
    if node is None:
        return None
    props = node.get("properties") or {}
    if key in props:
        return _with_own_extensions(props[key])
    extra = node.get("additionalProperties")
    return resolve(extra) if isinstance(extra, dict) else None


def items_schema(node: dict[str, Any] | None) -> dict[str, Any] | None:
    """The resolved schema of the items of an array node; None when unknown."""
    node = resolve(node)
    items = node.get("items") if node is not None else None
    return resolve(items) if isinstance(items, dict) else None


def _with_own_extensions(prop: dict[str, Any]) -> dict[str, Any] | None:
    # A property may carry patch extensions beside its $ref; they belong to the property, so keep them.
    target = resolve(prop)
    if target is None or target is prop:
        return target
    own = {k: v for k, v in prop.items() if k.startswith("x-kubernetes-")}
    return {**target, **own} if own else target


class Shape:
    """One schema node as typed decoding reads an object against it, worked out once and kept: whether
    it declares its fields (then any other is unknown), and for each field the shape of its value and
    whether an empty value is left out (`omitempty`: a map or a list the node does not require). A
    field's shape is looked up on first use and kept in its parent's, so that a walk over an object is
    dictionary lookups (the definitions never change)."""

    __slots__ = ("_node", "_properties", "_required", "fields", "_other", "_items", "closed")

    def __init__(self, node: dict[str, Any]) -> None:
        self._node = node
        properties = node.get("properties")
        self._properties: dict[str, Any] | None = properties
        self._required = frozenset(node.get("required") or ())
        self.fields: dict[str, tuple[Shape | None, bool]] = {}  # the declared fields met so far
        self._other: tuple[Shape | None, bool] | None = None
        self._items: tuple[Shape | None] | None = None
        self.closed = properties is not None and not node.get("additionalProperties")

    @staticmethod
    def of(node: dict[str, Any] | None) -> Shape | None:
        resolved = resolve(node)
        return Shape(resolved) if resolved is not None else None

    def field(self, key: str) -> tuple[Shape | None, bool] | None:
        """(the shape of the field's value, whether an empty value is dropped), or None for a field a
        closed node does not declare."""
        known = self.fields.get(key)
        if known is not None:
            return known
        if self._properties is None or key not in self._properties:
            if self.closed:
                return None
            if self._other is None:
                self._other = self._field_of(key)
            return self._other  # every undeclared key of an open node (a map's keys) shares one shape
        known = self.fields[key] = self._field_of(key)
        return known

    def items(self) -> Shape | None:
        if self._items is None:
            self._items = (Shape.of(items_schema(self._node)),)
        return self._items[0]

    def _field_of(self, key: str) -> tuple[Shape | None, bool]:
        shape = Shape.of(property_schema(self._node, key))
        if shape is None or self._properties is None or key in self._required:
            return shape, False
        types = shape._node.get("type")
        is_array = "array" in (types if isinstance(types, list) else [types])
        return shape, bool(shape._node.get("additionalProperties")) or is_array


@cache
def shape_for(gvk: tuple[str, str, str]) -> Shape | None:
    """The shape of a built-in kind's objects, or None when it is not a built-in kind."""
    return Shape.of(schema_for(gvk))


def unknown_fields(gvk: tuple[str, str, str], obj: dict[str, Any]) -> list[str]:
    """The paths of the fields of a built-in object that its kind does not declare, sorted, as the API server
    names them for `fieldValidation=Strict` (`spec.containers[0].bogus`); empty for unknown kinds."""
    schema = schema_for(gvk)
    found: list[str] = []
    if schema is not None:
        _unknown(obj, schema, "", found)
    return sorted(found)


def _unknown(value: Any, node: dict[str, Any] | None, path: str, found: list[str]) -> None:
    node = resolve(node)
    if node is None:
        return
    if isinstance(value, list):
        items = node.get("items")
        for index, item in enumerate(value):
            _unknown(item, items if isinstance(items, dict) else None, f"{path}[{index}]", found)
        return
    if not isinstance(value, dict):
        return
    props = node.get("properties") or {}
    extra = node.get("additionalProperties")
    if not props and not isinstance(extra, dict):
        return  # free-form objects (RawExtension, FieldsV1)
    for key, child in value.items():
        child_path = f"{path}.{key}" if path else key
        if key in props:
            _unknown(child, props[key], child_path, found)
        elif isinstance(extra, dict):
            _unknown(child, extra, child_path, found)
        else:
            found.append(child_path)
