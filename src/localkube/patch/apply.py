"""Server-side apply and field ownership (`metadata.managedFields`), after structured-merge-diff.

Apply merges the applied configuration into the live object (applied values win; associative lists merge by
key in structured-merge-diff's order), removes the fields the manager applied last time and no longer applies
when nobody else owns them, then checks the fields it changed against the other managers: changed fields they
own are conflicts (409) unless `force`, which takes them over. The manager then owns exactly what it applied.
An update (`record_update`) gives its manager every field it changed and takes them from the others.
Server-owned metadata (name, uid, resourceVersion, ...) and apiVersion/kind are never owned by anybody.
Neither function mutates its inputs. Field sets, their comparison and FieldsV1 live in `fieldset`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubesemantics import times
from kubesemantics.jsonvalue import json_equal
from localkube.admission import builtin
from localkube.patch.errors import ApplyConflict, PatchError
from localkube.patch.fieldset import (
    ListKind,
    Path,
    Schema,
    atomic_map,
    child,
    compare,
    created_fields,
    decode_fields,
    drop_emptied,
    encode_fields,
    field_set,
    list_kind,
    parents,
    path_string,
    remove_at,
    without_server_owned,
)

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
    return _with_entries(obj, _encode_managers(managers))


def _with_entries(obj: dict[str, Any], encoded: list[dict[str, Any]]) -> dict[str, Any]:
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
    if isinstance(live, dict) and isinstance(applied, dict) and (root or not atomic_map(node)):
        result = dict(live)
        for key, value in applied.items():
            if value is None:
                result.pop(key, None)
            elif key in live:
                result[key] = merge(live[key], value, child(node, key, root), root=False)
            else:
                result[key] = _clean(value)
        return result
    if isinstance(live, list) and isinstance(applied, list):
        shape = list_kind(node)
        if shape.kind != "atomic":
            return _merge_list(live, applied, node, shape)
    return _clean(applied)


def _merge_list(live: list[Any], applied: list[Any], node: Schema, shape: ListKind) -> list[Any]:
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
        before = without_server_owned(field_set(base, node))
        managers = [_Manager("before-first-apply", "Update", api_version, subresource, _now(now), before)]
    me = _Manager(manager, "Apply", api_version, subresource, _now(now), set())
    mine = next((m for m in managers if m.same_identity(me)), None)
    others = [m for m in managers if m is not mine]
    applied_fields = without_server_owned(field_set(_clean(applied), node))

    result = merge(base, applied, node)
    if mine is not None:
        owned_by_others = set().union(*(m.fields for m in others)) if others else set()
        kept = applied_fields | owned_by_others
        kept_prefixes = parents(kept)
        dropped = {path for path in mine.fields - kept if path not in kept_prefixes}
        # Remove whole subtrees once: a dropped list item goes with its fields, which name it.
        for path in sorted(dropped, key=len, reverse=True):
            if not any(path[:i] in dropped for i in range(1, len(path))):
                remove_at(result, path)
                drop_emptied(result, path[:-1], kept | kept_prefixes)

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
    given = (new.get("metadata") or {}).get("managedFields")
    # The API server maps a /scale writer's fields onto the object without a time (its entry sorts first).
    when = "" if subresource == "scale" else _now(now)
    me = _Manager(manager, "Update", _api_version(new, gvk), subresource, when, set())
    if old is None and not given:
        created = created_fields(after, node, typed=schema is None)
        if created is not None:
            me.encoded = created
            return _with_entries(after, [me.entry()] if created else [])
    changes = compare(before, after, node, typed=schema is None)
    touched = without_server_owned(changes.added | changes.modified)
    removed = without_server_owned(changes.removed)
    managers = _decode_managers(new if given and not subresource else old)
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
