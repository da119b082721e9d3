"""Field sets of structured-merge-diff: the paths of an object's fields, as the schema shapes them.

A field set is a set of paths; a path is a tuple of FieldsV1 elements: `f:<field>`, `k:<json keys>` (an item of
an associative list), `v:<json value>` (an item of a set) and `i:<index>`. Which lists are associative and
which maps are atomic comes from the schema: the official one for built-in kinds, the CRD's when given, and
otherwise every map is granular and every list atomic. The root's `metadata` is always typed as ObjectMeta.
This module walks values into field sets, compares two objects' sets, and encodes and decodes FieldsV1;
`apply` builds server-side apply and managedFields on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

import orjson

from kubesemantics.jsonvalue import json_equal
from localkube.admission import builtin
from localkube.patch.errors import PatchingError

Path = tuple[str, ...]
Schema = dict[str, Any] | None
_MISSING: Final = object()
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_SERVER_OWNED: Final[frozenset[Path]] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", f"f:{name}")
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)


# --- the shape of values, from the schema ------------------------------------------------------------------


def child(node: Schema, key: str, root: bool) -> Schema:
    if root and key == "metadata":
        return builtin.definitions().get(_OBJECT_META)
    return builtin.property_schema(node, key)


@dataclass(frozen=True)
class ListKind:
    """How structured-merge-diff treats a list: "atomic", "set" or "map" (with its keys and their defaults)."""

    kind: str
    keys: tuple[str, ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()

    def element(self, item: Any, index: int) -> str:
        """The FieldsV1 element naming an item of the list."""
        if self.kind == "map" and isinstance(item, dict):
            if len(self.keys) == 1 and not self.defaults:
                # The usual identity, one string (a container's or a variable's name), written directly.
                value = item.get(self.keys[0])
                if type(value) is str:
                    try:
                        return f"k:{{{self._key_json}:{orjson.dumps(value).decode()}}}"
                    except orjson.JSONEncodeError:  # see _compact_json
                        pass
            # A key the item leaves out takes its schema default, as structured-merge-diff does.
            identity = {k: item[k] for k in self.keys if k in item} | {
                k: v for k, v in self.defaults if k not in item
            }
            return "k:" + _compact_json(identity)
        if self.kind == "set":
            return "v:" + _compact_json(item)
        return f"i:{index}"

    @cached_property
    def _key_json(self) -> str:
        return json.dumps(self.keys[0], ensure_ascii=False)


_INT64: Final = range(-(2**63), 2**63)


def _compact_json(value: Any) -> str:
    """`value` as compact JSON with sorted keys and unescaped non-ASCII text. orjson writes it when `value`
    is a scalar or a flat map of strings, integers, booleans and nulls, where its text is the json module's
    (it writes floats differently and refuses integers past 64 bits); keys of list items are nearly always
    that, and the json module took four times as long."""
    flat = value.values() if isinstance(value, dict) else (value,)
    if all(v is None or type(v) in (str, bool) or (type(v) is int and v in _INT64) for v in flat):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONEncodeError:  # a lone surrogate, which json writes as it is
            pass
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


# kubernetes-validate's schemas drop defaults; the one a built-in list-map key relies on is a port's protocol.
_BUILTIN_KEY_DEFAULTS: Final = {"protocol": "TCP"}


def list_kind(node: Schema) -> ListKind:
    resolved = builtin.resolve(node) or {}
    list_type = resolved.get("x-kubernetes-list-type")
    if list_type in ("set", "atomic"):
        return ListKind(str(list_type))
    keys: list[str] = []
    if list_type == "map":
        keys = [str(k) for k in resolved.get("x-kubernetes-list-map-keys") or []]
    elif "merge" in str(resolved.get("x-kubernetes-patch-strategy", "")).split(","):
        key = resolved.get("x-kubernetes-patch-merge-key")
        if not key:
            return ListKind("set")
        keys = [str(key)]
    else:
        return ListKind("atomic")
    item_props = (builtin.items_schema(node) or {}).get("properties") or {}
    defaults = []
    for key in keys:
        declared = builtin.resolve(item_props.get(key)) or {}
        if "default" in declared:
            defaults.append((key, declared["default"]))
        elif key in _BUILTIN_KEY_DEFAULTS:
            defaults.append((key, _BUILTIN_KEY_DEFAULTS[key]))
    return ListKind("map", tuple(keys), tuple(defaults))


def atomic_map(node: Schema) -> bool:
    resolved = builtin.resolve(node) or {}
    return resolved.get("x-kubernetes-map-type") == "atomic"


# --- field sets --------------------------------------------------------------------------------------------


def field_set(obj: Any, node: Schema) -> set[Path]:
    """The paths an object sets, as structured-merge-diff's ToFieldSet computes them."""
    return set(field_values(obj, node))


def field_values(obj: Any, node: Schema, containers: set[Path] | None = None) -> dict[Path, Any]:
    """The paths an object sets, each with the value found there; the paths of the maps and lists that hold
    them are added to `containers` when given."""
    found: dict[Path, Any] = {}
    _collect(obj, _Node.of(node), (), found, containers)
    return found


class _Node:
    """What a walk over values needs of one schema node (`schema`; `root`: the object's own), worked out
    on first use and kept: each declared field's node is kept in its parent's, every undeclared key (a
    map's) shares one, so that a walk does no schema lookups once warm. Root nodes are kept by the
    schema's id, with the schema itself (so that the id stays its own), and forgotten all at once past
    `_ROOTS_KEPT` (a CRD's schema is replaced when the CRD changes)."""

    __slots__ = (
        "schema",
        "root",
        "atomic_map",
        "struct",
        "required",
        "_declared",
        "_list_kind",
        "_items",
        "_fields",
        "_other",
    )
    _roots: dict[int, _Node] = {}
    _ROOTS_KEPT = 1024

    def __init__(self, schema: Schema, root: bool) -> None:
        self.schema = schema
        self.root = root
        self.atomic_map = not root and atomic_map(schema)
        resolved = builtin.resolve(schema) or {}
        self.struct = bool(resolved.get("properties")) and not resolved.get("additionalProperties")
        self.required = frozenset(resolved.get("required") or ())
        self._declared = frozenset(resolved.get("properties") or ()) | ({"metadata"} if root else set())
        self._list_kind: ListKind | None = None
        self._items: _Node | None = None
        self._fields: dict[str, tuple[_Node, bool]] = {}
        self._other: tuple[_Node, bool] | None = None

    @classmethod
    def of(cls, schema: Schema) -> _Node:
        node = cls._roots.get(id(schema))
        if node is None or node.schema is not schema:
            if len(cls._roots) >= cls._ROOTS_KEPT:
                cls._roots.clear()
            node = cls._roots[id(schema)] = _Node(schema, True)
        return node

    def field(self, key: str) -> tuple[_Node, bool]:
        """The node of a map's key and whether the schema declares it."""
        known = self._fields.get(key)
        if known is not None:
            return known
        if key in self._declared:
            known = self._fields[key] = (_Node(child(self.schema, key, self.root), False), True)
            return known
        if self._other is None:
            self._other = (_Node(child(self.schema, key, self.root), False), False)
        return self._other

    def list_kind(self) -> ListKind:
        if self._list_kind is None:
            self._list_kind = list_kind(self.schema)
        return self._list_kind

    def items(self) -> _Node:
        if self._items is None:
            self._items = _Node(builtin.items_schema(self.schema), False)
        return self._items


def _collect(
    value: Any, node: _Node, path: Path, found: dict[Path, Any], containers: set[Path] | None
) -> None:
    if isinstance(value, dict):
        if node.atomic_map:
            found[path] = value
            return
        if containers is not None and not node.root:
            containers.add(path)
        for key, child in value.items():
            child_path = (*path, f"f:{key}")
            child_node, declared = node.field(key)
            if isinstance(child, dict | list):
                _collect(child, child_node, child_path, found, containers)
                if child == {} or not declared:
                    found[child_path] = child
            else:
                found[child_path] = child
    elif isinstance(value, list):
        shape = node.list_kind()
        if shape.kind == "atomic":
            found[path] = value
            return
        if containers is not None:
            containers.add(path)
        items = node.items()
        for index, item in enumerate(value):
            item_path = (*path, shape.element(item, index))
            if isinstance(item, dict | list):
                _collect(item, items, item_path, found, containers)
            found[item_path] = item
    elif path:
        found[path] = value


def _in_zero_value(root_node: Schema, path: Path) -> bool:
    """Whether the zero value of a built-in kind already holds `path`: Go's zero struct holds its structs
    and, as null, its fields without `omitempty` (the schema's `required` ones), and nothing inside a list.
    A write into such a field does not create it. (Pointer structs are taken for structs: the schema does
    not tell them apart.)"""
    node = _Node.of(root_node)
    for element in path:
        kind, _, name = element.partition(":")
        if kind != "f":
            return False
        child, _ = node.field(name)
        if not (child.struct or name in node.required):
            return False
        node = child
    return True


def parents(paths: Iterable[Path]) -> set[Path]:
    """The paths some other path is under (not the root): each prefix is made once, climbing from a path
    only until a prefix already found."""
    found: set[Path] = set()
    for path in paths:
        prefix = path[:-1]
        while prefix and prefix not in found:
            found.add(prefix)
            prefix = prefix[:-1]
    return found


def without_server_owned(paths: set[Path]) -> set[Path]:
    return {path for path in paths if path not in _SERVER_OWNED}


def _value_at(value: Any, path: Path) -> Any:
    for element in path:
        kind, _, text = element.partition(":")
        if kind == "f" and isinstance(value, dict) and text in value:
            value = value[text]
        elif kind in ("k", "v") and isinstance(value, list):
            value = next((item for item in value if _matches(item, kind, text)), _MISSING)
        elif kind == "i" and isinstance(value, list) and int(text) < len(value):
            value = value[int(text)]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _matches(item: Any, kind: str, text: str) -> bool:
    if kind == "v":
        return _compact_json(item) == text
    keys = json.loads(text)
    return isinstance(item, dict) and all(item.get(k) == v for k, v in keys.items())


def remove_at(value: Any, path: Path) -> None:
    parent = _value_at(value, path[:-1])
    kind, _, text = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(text, None)
    elif kind in ("k", "v") and isinstance(parent, list):
        parent[:] = [item for item in parent if not _matches(item, kind, text)]


def drop_emptied(value: Any, path: Path, kept: set[Path]) -> None:
    """Remove the maps a removal left empty, up to the first one somebody still has a claim on."""
    while path and path not in kept and _value_at(value, path) == {}:
        remove_at(value, path)
        path = path[:-1]


@dataclass(frozen=True)
class Changes:
    """How an object changed, as field sets (structured-merge-diff's Comparison)."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)


def compare(old: Any, new: Any, node: Schema, *, typed: bool = False) -> Changes:
    """What changed from `old` to `new`. A map or list that `new` creates is itself added (FieldsV1's `.`),
    as structured-merge-diff's comparison adds it, except `metadata` and, on a built-in (`typed`) kind, what
    the kind's zero value already holds (the old object of a create is that zero value)."""
    old, new = _without_equal_members(old, new)
    old_containers: set[Path] = set()
    new_containers: set[Path] = set()
    old_values = field_values(old, node, old_containers)
    new_values = field_values(new, node, new_containers)
    old_set, new_set = old_values.keys(), new_values.keys()
    inner = parents(old_set | new_set)
    modified = {
        path
        for path in old_set & new_set
        if path not in inner and not json_equal(old_values[path], new_values[path])
    }
    created = {
        path
        for path in new_containers - old_containers - old_set
        if path != ("f:metadata",) and not (typed and _in_zero_value(node, path))
    }
    added = new_set - old_set
    if typed:
        # An empty struct the zero value holds (a Service's status.loadBalancer) is no change.
        added = {p for p in added if new_values[p] != {} or not _in_zero_value(node, p)}
    return Changes(set(added) | created, modified, set(old_set - new_set))


class _SameItemTwice(PatchingError):
    """A list holds two items of one identity; only the set-based route merges their paths. Never leaves
    `created_fields`, which answers None for it."""


_OWNED_AT_ROOT: Final = frozenset(path[0][2:] for path in _SERVER_OWNED if len(path) == 1)
_OWNED_IN_METADATA: Final = frozenset(path[1][2:] for path in _SERVER_OWNED if len(path) == 2)
_NONE_OWNED: Final[frozenset[str]] = frozenset()


def created_fields(obj: dict[str, Any], node: Schema, *, typed: bool = False) -> dict[str, Any] | None:
    """The FieldsV1 of what creating `obj` sets, without server-owned fields: what
    `encode_fields(without_server_owned(compare({}, obj, node, typed=typed).added))` gives, in one walk over
    the object instead of building every path, comparing sets and sorting them (a create's bookkeeping was a
    tenth of localkube's CPU). None when a list holds two items of one identity: that route merges them."""
    try:
        return _created_members(obj, _Node.of(node), typed, _OWNED_AT_ROOT)
    except _SameItemTwice:
        return None


def _created_members(
    value: dict[str, Any], node: _Node, zero: bool, server_owned: frozenset[str]
) -> dict[str, Any]:
    """The FieldsV1 under a map. `zero`: a typed kind's zero value holds this map (see `_in_zero_value`),
    and so the maps and empty maps it holds are no change."""
    tree: dict[str, Any] = {}
    for key in sorted(value):
        member = value[key]
        if not isinstance(member, dict | list):  # a scalar: its own field, whatever the schema says
            if key not in server_owned:
                tree[f"f:{key}"] = {}
            continue
        member_node, declared = node.field(key)
        member_zero = zero and (member_node.struct or key in node.required)
        below: dict[str, Any] = {}
        if isinstance(member, dict):
            if member_node.atomic_map:
                own = not (member_zero and member == {})
            else:
                inner_owned = _OWNED_IN_METADATA if node.root and key == "metadata" else _NONE_OWNED
                below = _created_members(member, member_node, member_zero, inner_owned)
                created = not member_zero and not (node.root and key == "metadata")
                own = created or ((member == {} or not declared) and not (member == {} and member_zero))
        else:
            shape = member_node.list_kind()
            if shape.kind == "atomic":
                own = True
            else:
                own = not member_zero or not declared
                below = _created_items(member, member_node, shape)
        if key in server_owned:
            own = False
        if own:
            tree[f"f:{key}"] = {".": {}, **below} if below else {}
        elif below:
            tree[f"f:{key}"] = below
    return tree


def _created_items(value: list[Any], node: _Node, shape: ListKind) -> dict[str, Any]:
    items = node.items()
    tree: dict[str, Any] = {}
    for index, item in enumerate(value):
        element = shape.element(item, index)
        if element in tree:
            raise _SameItemTwice
        below: dict[str, Any] = {}
        if isinstance(item, dict) and not items.atomic_map:
            below = _created_members(item, items, False, _NONE_OWNED)
        elif isinstance(item, list):
            item_shape = items.list_kind()
            if item_shape.kind != "atomic":
                below = _created_items(item, items, item_shape)
        tree[element] = {".": {}, **below} if below else {}
    return dict(sorted(tree.items()))


def _without_equal_members(old: Any, new: Any) -> tuple[Any, Any]:
    """`old` and `new` without the top-level members they hold alike, which add, change and remove
    nothing (a status write leaves a large spec as it was): told by their encodings, which are equal only
    for equal JSON values (a walk over the fields of both would cost many times more)."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return old, new
    try:
        same = {
            key for key, value in old.items() if key in new and orjson.dumps(value) == orjson.dumps(new[key])
        }
    except orjson.JSONEncodeError:
        return old, new
    if not same:
        return old, new
    return (
        {key: value for key, value in old.items() if key not in same},
        {key: value for key, value in new.items() if key not in same},
    )


# --- FieldsV1 ----------------------------------------------------------------------------------------------


def encode_fields(paths: set[Path]) -> dict[str, Any]:
    """A field set in the FieldsV1 format: nested objects, `.` marking a member that also has children.

    One pass over the sorted paths: a path sorts before every path under it, so each level's elements
    arrive in order, and a member's `.` goes in first, before the children that make it a parent."""
    tree: dict[str, Any] = {}
    ends: list[dict[str, Any]] = []
    for path in sorted(paths):
        level = tree
        for element in path:
            below = level.get(element)
            if below is None:
                below = level[element] = {}
            level = below
        ends.append(level)
    for level in ends:
        if level:
            children = list(level.items())
            level.clear()
            level["."] = {}
            level.update(children)
    return tree


def decode_fields(fields: dict[str, Any], path: Path = ()) -> set[Path]:
    found: set[Path] = set()
    for element, children in (fields or {}).items():
        if element == ".":
            found.add(path)
            continue
        child_path = (*path, element)
        if children:
            found |= decode_fields(children, child_path)
        else:
            found.add(child_path)
    return found


def path_string(path: Path) -> str:
    """A path as structured-merge-diff prints it: `.spec.containers[name="c"].image`."""
    text = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            text += f".{rest}"
        elif kind == "k":
            keys = json.loads(rest)
            text += (
                "[" + ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in keys.items()) + "]"
            )
        elif kind == "v":
            text += f"[={rest}]"
        else:
            text += f"[{rest}]"
    return text
