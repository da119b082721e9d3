"""Server-side apply and field ownership (`metadata.managedFields`), after structured-merge-diff.

A field set is a set of paths; a path is a tuple of FieldsV1 elements: `f:<field>`, `k:<json keys>` (an item of
an associative list), `v:<json value>` (an item of a set) and `i:<index>`. Which lists are associative and
which maps are atomic comes from the schema: the official one for built-in kinds, the CRD's when given, and
otherwise every map is granular and every list atomic. The root's `metadata` is always typed as ObjectMeta.

Apply merges the applied configuration into the live object (applied values win; associative lists merge by
key in structured-merge-diff's order), removes the fields the manager applied last time and no longer applies
when nobody else owns them, then checks the fields it changed against the other managers: changed fields they
own are conflicts (409) unless `force`, which takes them over. The manager then owns exactly what it applied.
An update (`record_update`) gives its manager every field it changed and takes them from the others.
Server-owned metadata (name, uid, resourceVersion, ...) and apiVersion/kind are never owned by anybody.
Neither function mutates its inputs.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from kubesemantics import times
from kubesemantics.jsonvalue import json_equal
from localkube.admission import builtin
from localkube.patch.errors import ApplyConflict, PatchError

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


def _child(node: Schema, key: str, root: bool) -> Schema:
    if root and key == "metadata":
        return builtin.definitions().get(_OBJECT_META)
    return builtin.property_schema(node, key)


def _declares(node: Schema, key: str, root: bool) -> bool:
    if root and key == "metadata":
        return True
    resolved = builtin.resolve(node)
    return resolved is not None and key in (resolved.get("properties") or {})


@dataclass(frozen=True)
class _ListKind:
    """How structured-merge-diff treats a list: "atomic", "set" or "map" (with its keys and their defaults)."""

    kind: str
    keys: tuple[str, ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()

    def element(self, item: Any, index: int) -> str:
        """The FieldsV1 element naming an item of the list."""
        if self.kind == "map" and isinstance(item, dict):
            # A key the item leaves out takes its schema default, as structured-merge-diff does.
            identity = {k: item[k] for k in self.keys if k in item} | {
                k: v for k, v in self.defaults if k not in item
            }
            return "k:" + json.dumps(
                dict(sorted(identity.items())), separators=(",", ":"), ensure_ascii=False
            )
        if self.kind == "set":
            return "v:" + json.dumps(item, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return f"i:{index}"


# kubernetes-validate's schemas drop defaults; the one a built-in list-map key relies on is a port's protocol.
_BUILTIN_KEY_DEFAULTS: Final = {"protocol": "TCP"}


def _list_kind(node: Schema) -> _ListKind:
    resolved = builtin.resolve(node) or {}
    list_type = resolved.get("x-kubernetes-list-type")
    if list_type in ("set", "atomic"):
        return _ListKind(str(list_type))
    keys: list[str] = []
    if list_type == "map":
        keys = [str(k) for k in resolved.get("x-kubernetes-list-map-keys") or []]
    elif "merge" in str(resolved.get("x-kubernetes-patch-strategy", "")).split(","):
        key = resolved.get("x-kubernetes-patch-merge-key")
        if not key:
            return _ListKind("set")
        keys = [str(key)]
    else:
        return _ListKind("atomic")
    item_props = (builtin.items_schema(node) or {}).get("properties") or {}
    defaults = []
    for key in keys:
        declared = builtin.resolve(item_props.get(key)) or {}
        if "default" in declared:
            defaults.append((key, declared["default"]))
        elif key in _BUILTIN_KEY_DEFAULTS:
            defaults.append((key, _BUILTIN_KEY_DEFAULTS[key]))
    return _ListKind("map", tuple(keys), tuple(defaults))


def _atomic_map(node: Schema) -> bool:
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
        self.atomic_map = not root and _atomic_map(schema)
        resolved = builtin.resolve(schema) or {}
        self.struct = bool(resolved.get("properties")) and not resolved.get("additionalProperties")
        self.required = frozenset(resolved.get("required") or ())
        self._list_kind: _ListKind | None = None
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
        if _declares(self.schema, key, self.root):
            known = self._fields[key] = (_Node(_child(self.schema, key, self.root), False), True)
            return known
        if self._other is None:
            self._other = (_Node(_child(self.schema, key, self.root), False), False)
        return self._other

    def list_kind(self) -> _ListKind:
        if self._list_kind is None:
            self._list_kind = _list_kind(self.schema)
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


def _parents(paths: Iterable[Path]) -> set[Path]:
    """The paths some other path is under (not the root): each prefix is made once, climbing from a path
    only until a prefix already found."""
    found: set[Path] = set()
    for path in paths:
        prefix = path[:-1]
        while prefix and prefix not in found:
            found.add(prefix)
            prefix = prefix[:-1]
    return found


def _strip(paths: set[Path]) -> set[Path]:
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
        return json.dumps(item, separators=(",", ":"), sort_keys=True, ensure_ascii=False) == text
    keys = json.loads(text)
    return isinstance(item, dict) and all(item.get(k) == v for k, v in keys.items())


def _remove_at(value: Any, path: Path) -> None:
    parent = _value_at(value, path[:-1])
    kind, _, text = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(text, None)
    elif kind in ("k", "v") and isinstance(parent, list):
        parent[:] = [item for item in parent if not _matches(item, kind, text)]


def _drop_emptied(value: Any, path: Path, kept: set[Path]) -> None:
    """Remove the maps a removal left empty, up to the first one somebody still has a claim on."""
    while path and path not in kept and _value_at(value, path) == {}:
        _remove_at(value, path)
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
    inner = _parents(old_set | new_set)
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


# --- managers ----------------------------------------------------------------------------------------------


@dataclass
class _Manager:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str
    fields: set[Path]
    # The stored fieldsV1 these fields were decoded from, reused while they stay the same: encoding every
    # manager's field set again on each write cost more than the rest of the bookkeeping.
    encoded: dict[str, Any] | None = field(default=None, compare=False)

    def disown(self, paths: set[Path]) -> None:
        """Gives up `paths` (another manager set them, or they were removed)."""
        if not self.fields.isdisjoint(paths):
            self.fields -= paths
            self.encoded = None

    def same_identity(self, other: _Manager) -> bool:
        # Appliers are one manager across API versions; updaters are one per API version.
        same_version = self.operation == "Apply" or self.api_version == other.api_version
        return (self.manager, self.operation, self.subresource) == (
            other.manager,
            other.operation,
            other.subresource,
        ) and same_version

    def display(self) -> str:
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.encoded if self.encoded is not None else encode_fields(self.fields),
        }
        if self.time:
            entry["time"] = self.time
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def _decode_managers(obj: dict[str, Any] | None) -> list[_Manager]:
    entries = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    return [
        _Manager(
            str(e.get("manager", "")),
            str(e.get("operation", "Update")),
            str(e.get("apiVersion", "")),
            str(e.get("subresource", "")),
            str(e.get("time", "")),
            decode_fields(e.get("fieldsV1") or {}),
            e.get("fieldsV1") or {},
        )
        for e in entries
        if isinstance(e, dict)
    ]


def _encode_managers(managers: list[_Manager]) -> list[dict[str, Any]]:
    kept = [m for m in managers if m.fields]
    kept.sort(key=lambda m: (m.operation, m.time, m.manager, m.api_version, m.subresource))
    return [m.entry() for m in kept]


def _without_managed_fields(obj: dict[str, Any] | None, *, deep: bool) -> dict[str, Any]:
    """A copy of the object without managedFields: deep when the caller will edit nested values."""
    result = (copy.deepcopy(obj) if deep else dict(obj)) if obj else {}
    if isinstance(result.get("metadata"), dict):
        result["metadata"] = {k: v for k, v in result["metadata"].items() if k != "managedFields"}
    return result


def _now(now: str) -> str:
    return now or times.format_time(datetime.now(UTC))


def _api_version(obj: dict[str, Any], gvk: tuple[str, str, str] | None) -> str:
    if obj.get("apiVersion") or gvk is None:
        return str(obj.get("apiVersion", ""))
    group, version, _ = gvk
    return f"{group}/{version}" if group else version


def _schema(obj: dict[str, Any], gvk: tuple[str, str, str] | None, schema: Schema) -> Schema:
    if schema is not None:
        return schema
    if gvk is None:
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        gvk = (group, version, str(obj.get("kind", "")))
    return builtin.schema_for(gvk)


def _with_managers(obj: dict[str, Any], managers: list[_Manager]) -> dict[str, Any]:
    encoded = _encode_managers(managers)
    metadata = obj.setdefault("metadata", {})
    if encoded:
        metadata["managedFields"] = encoded
    else:
        metadata.pop("managedFields", None)
    return obj


# --- merging an applied configuration ----------------------------------------------------------------------


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def merge(live: Any, applied: Any, node: Schema, *, root: bool = True) -> Any:
    """The applied configuration merged into the live value (applied values win)."""
    if isinstance(live, dict) and isinstance(applied, dict) and (root or not _atomic_map(node)):
        result = dict(live)
        for key, value in applied.items():
            if value is None:
                result.pop(key, None)
            elif key in live:
                result[key] = merge(live[key], value, _child(node, key, root), root=False)
            else:
                result[key] = _clean(value)
        return result
    if isinstance(live, list) and isinstance(applied, list):
        shape = _list_kind(node)
        if shape.kind != "atomic":
            return _merge_list(live, applied, node, shape)
    return _clean(applied)


def _merge_list(live: list[Any], applied: list[Any], node: Schema, shape: _ListKind) -> list[Any]:
    # structured-merge-diff's order: live-only items stay where they are, shared items follow the applied order.
    items = builtin.items_schema(node)
    lhs = [shape.element(item, i) for i, item in enumerate(live)]
    rhs = [shape.element(item, i) for i, item in enumerate(applied)]
    lhs_items = dict(zip(lhs, live, strict=True))
    rhs_items = dict(zip(rhs, applied, strict=True))

    def merged_item(element: str) -> Any:
        if element in lhs_items and element in rhs_items:
            return merge(lhs_items[element], rhs_items[element], items, root=False)
        return _clean(rhs_items[element]) if element in rhs_items else lhs_items[element]

    shared = [element for element in rhs if element in lhs_items]
    next_shared = shared.pop(0) if shared else None
    done: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lhs) or ri < len(rhs):
        if li < len(lhs) and ri < len(rhs):
            element = lhs[li]
            if element == rhs[ri]:
                done.add(element)
                out.append(merged_item(element))
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in rhs_items and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(lhs):
            element = lhs[li]
            if element not in rhs_items:
                out.append(lhs_items[element])
                li += 1
                continue
            if element in done:
                li += 1
        if ri < len(rhs):
            element = rhs[ri]
            if element not in done:
                done.add(element)
                out.append(merged_item(element))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = shared.pop(0) if shared else None
    return out


# --- the two operations ------------------------------------------------------------------------------------


def server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str,
    force: bool,
    gvk: tuple[str, str, str] | None = None,
    schema: dict[str, Any] | None = None,
    *,
    subresource: str = "",
    now: str = "",
) -> dict[str, Any]:
    """The object after `manager` applies `applied` to `live` (None: create); ApplyConflict when it would
    change fields other managers own and `force` is false. `gvk` defaults to the applied object's
    apiVersion and kind; `schema` is a CRD version's openAPIV3Schema."""
    if not isinstance(applied, dict):
        raise PatchError("error decoding YAML: the applied configuration is not an object", code=400)
    if not manager:
        raise PatchError("PATCH, actionType: apply requires fieldManager to be set", code=400)
    if (applied.get("metadata") or {}).get("managedFields") is not None:
        raise PatchError("metadata.managedFields must be nil", code=400)
    if gvk is not None:
        expected = f"{gvk[0]}/{gvk[1]}" if gvk[0] else gvk[1]
        if applied.get("apiVersion") != expected:
            detail = f"Incorrect version specified in apply patch. Specified patch version: {applied.get('apiVersion', '')}, expected: {expected}"
            raise PatchError(detail, code=400)
    node = _schema(applied, gvk, schema)
    base = _without_managed_fields(live, deep=True)
    managers = _decode_managers(live)
    api_version = _api_version(applied, gvk)
    if live is not None and not managers:
        before = _strip(field_set(base, node))
        managers = [_Manager("before-first-apply", "Update", api_version, subresource, _now(now), before)]
    me = _Manager(manager, "Apply", api_version, subresource, _now(now), set())
    mine = next((m for m in managers if m.same_identity(me)), None)
    others = [m for m in managers if m is not mine]
    applied_fields = _strip(field_set(_clean(applied), node))

    result = merge(base, applied, node)
    if mine is not None:
        owned_by_others = set().union(*(m.fields for m in others)) if others else set()
        kept = applied_fields | owned_by_others
        kept_prefixes = _parents(kept)
        dropped = {path for path in mine.fields - kept if path not in kept_prefixes}
        # Remove whole subtrees once: a dropped list item goes with its fields, which name it.
        for path in sorted(dropped, key=len, reverse=True):
            if not any(path[:i] in dropped for i in range(1, len(path))):
                _remove_at(result, path)
                _drop_emptied(result, path[:-1], kept | kept_prefixes)

    changes = compare(base, result, node)
    changed = changes.added | changes.modified
    conflicts = [(m, sorted(m.fields & changed)) for m in others if m.fields & changed]
    if conflicts and not force:
        raise ApplyConflict(
            [
                (m.display(), path_string(p))
                for m, paths in sorted(conflicts, key=lambda c: c[0].display())
                for p in paths
            ]
        )
    for other in others:
        other.disown(changed | changes.removed)
    me.fields = applied_fields
    if mine is not None and json_equal(result, base):
        me.time = mine.time  # an apply that changes nothing leaves its manager's time alone
    return _with_managers(result, [*others, me])


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    gvk: tuple[str, str, str] | None = None,
    schema: dict[str, Any] | None = None,
    *,
    subresource: str = "",
    now: str = "",
) -> dict[str, Any]:
    """`new` with managedFields updated for a create (old None), update or non-apply patch by `manager`.

    As on the API server, a write that sets managedFields to a non-empty list (outside subresources) replaces
    the recorded ownership before this write is accounted for; `[{}]` therefore clears it, while an empty or
    missing list keeps the old one, so clients unaware of the field cannot erase it. The result shares nested
    values with `new` (it is not a deep copy)."""
    node = _schema(new, gvk, schema)
    before, after = _without_managed_fields(old, deep=False), _without_managed_fields(new, deep=False)
    changes = compare(before, after, node, typed=schema is None)
    touched = _strip(changes.added | changes.modified)
    removed = _strip(changes.removed)
    given = (new.get("metadata") or {}).get("managedFields")
    managers = _decode_managers(new if given and not subresource else old)
    # The API server maps a /scale writer's fields onto the object without a time (its entry sorts first).
    when = "" if subresource == "scale" else _now(now)
    me = _Manager(manager, "Update", _api_version(new, gvk), subresource, when, set())
    mine = next((m for m in managers if m.same_identity(me)), None)
    others = [m for m in managers if m is not mine]
    for other in others:
        other.disown(touched | removed)
    me.fields = ((mine.fields if mine else set()) - removed) | touched
    if mine is not None and me.fields == mine.fields:
        me.encoded = mine.encoded
    if mine is not None and not touched and not removed:
        me.time = mine.time
    return _with_managers(after, [*others, me])
