"""Strategic merge patches of built-in kinds, after apimachinery's `strategicpatch`.

Each field's behaviour comes from the kind's official schema (`x-kubernetes-patch-strategy`,
`x-kubernetes-patch-merge-key`): maps merge key by key; lists with the `merge` strategy merge their items by
the merge key (or by value for lists of scalars); other lists, and fields with the `replace` strategy, are
replaced whole. Directives: `$patch: replace|delete|merge` in maps and list items, `$retainKeys`,
`$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`. Nulls in the patch delete.

Order of merged lists, as apimachinery orders them: the patch's items keep the patch's order, the items only
the live object has keep theirs, and the two are interleaved by their positions in the live list, so an item
new to the list comes before the live items it cannot be placed against (the Kubernetes docs' example of a
second container landing first). A kind without a schema merges maps and replaces lists.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from localkube.admission import builtin
from localkube.patch.errors import PatchError

_DELETE_FROM = "$deleteFromPrimitiveList/"
_SET_ORDER = "$setElementOrder/"
Schema = dict[str, Any] | None


def strategic_merge_patch(
    doc: dict[str, Any], patch: dict[str, Any], gvk: tuple[str, str, str]
) -> dict[str, Any]:
    """`doc` with a strategic merge patch applied, using the official schema of the (group, version, kind)."""
    if not isinstance(patch, dict):
        raise PatchError("invalid JSON document", code=400)
    merged = _merge_map(copy.deepcopy(doc), patch, builtin.schema_for(gvk))
    return merged if merged is not None else {}


def _strategy(schema: Schema) -> set[str]:
    return set(str((schema or {}).get("x-kubernetes-patch-strategy", "")).split(","))


def _clean(value: Any) -> Any:
    """A patch value as stored: directives and nulls removed (the server ignores unmatched nulls)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value if not (isinstance(v, dict) and "$patch" in v)]
    return value


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Schema) -> dict[str, Any] | None:
    directive = patch.get("$patch")
    if directive == "replace":
        return dict(_clean(patch))
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError(f"unknown patch type: {directive} in map: {json.dumps(patch)}", code=500)
    retained = patch.get("$retainKeys")
    if retained is not None:
        if not isinstance(retained, list):
            raise PatchError("invalid patch format of retainKeys", code=400)
        original = {k: v for k, v in original.items() if k in retained}
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            field = key.removeprefix(_DELETE_FROM)
            if not isinstance(value, list):
                raise PatchError("invalid patch format of primitive list", code=400)
            if isinstance(original.get(field), list):
                original[field] = [item for item in original[field] if item not in value]
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            original.pop(key, None)
            continue
        child = builtin.property_schema(schema, key)
        current = original.get(key)
        if isinstance(value, dict):
            if "replace" in _strategy(child):
                original[key] = _clean(value)
                continue
            merged = _merge_map(current if isinstance(current, dict) else {}, value, child)
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            order = patch.get(_SET_ORDER + key)
            if "merge" in _strategy(child):
                merge_key = (child or {}).get("x-kubernetes-patch-merge-key")
                original[key] = _merge_list(
                    current if isinstance(current, list) else [], value, child, merge_key, order
                )
            else:
                original[key] = _clean(value)
        else:
            original[key] = value
    for key, order in patch.items():
        field = key.removeprefix(_SET_ORDER)
        if key.startswith(_SET_ORDER) and field not in patch and isinstance(original.get(field), list):
            child = builtin.property_schema(schema, field)
            identity = _identity((child or {}).get("x-kubernetes-patch-merge-key"))
            original[field] = _ordered(original[field], order, original[field], identity)
    return original


def _identity(merge_key: str | None) -> Callable[[Any], str]:
    def identity(item: Any) -> str:
        value = item.get(merge_key) if merge_key and isinstance(item, dict) else item
        return json.dumps(value, sort_keys=True)

    return identity


def _merge_list(
    original: list[Any], patch: list[Any], schema: Schema, merge_key: str | None, order: Any
) -> list[Any]:
    if any(isinstance(item, list) for item in patch):
        raise PatchError("lists of lists are not supported", code=422)
    maps = [item for item in patch if isinstance(item, dict)]
    if not maps:
        identity = _identity(None)
        scalars = list({identity(item): item for item in patch}.values())
        seen = {identity(item) for item in scalars}
        server_only = [item for item in original if identity(item) not in seen]
        return _ordered(server_only + scalars, order, original, identity, scalars)
    if any(item.get("$patch") == "replace" for item in maps):
        return [_clean(item) for item in patch if not (isinstance(item, dict) and "$patch" in item)]
    if not merge_key:
        return [_clean(item) for item in patch]
    identity = _identity(merge_key)
    originals = {identity(item): item for item in original}
    deleted: set[str] = set()
    patched: list[Any] = []
    for item in maps:
        if item.get("$patch") == "delete":
            deleted.add(identity(item))
            continue
        if merge_key not in item:
            raise PatchError(
                f"map: {json.dumps(item)} does not contain declared merge key: {merge_key}", code=500
            )
        base = originals.get(identity(item))
        merged = _merge_map(
            copy.deepcopy(base) if isinstance(base, dict) else {}, item, builtin.items_schema(schema)
        )
        if merged is not None and identity(item) not in {identity(p) for p in patched}:
            patched.append(merged)
    touched = deleted | {identity(item) for item in patched}
    server_only = [item for item in original if identity(item) not in touched]
    return _ordered(server_only + patched, order, original, identity, patched)


def _ordered(
    items: list[Any],
    order: Any,
    server: list[Any],
    identity: Callable[[Any], str],
    patched: list[Any] | None = None,
) -> list[Any]:
    """Interleave patched items and server-only items as apimachinery does (see the module docstring)."""
    right_ids = {identity(item) for item in patched} if patched is not None else set()
    if isinstance(order, list):
        rank = {identity(item): index for index, item in enumerate(order)}
        right = sorted(
            (item for item in items if identity(item) in rank), key=lambda item: rank[identity(item)]
        )
        left = [item for item in items if identity(item) not in rank]
    else:
        right = [item for item in items if identity(item) in right_ids]
        left = [item for item in items if identity(item) not in right_ids]
    position = {identity(item): index for index, item in enumerate(server)}
    result: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            result.append(left[i])
            i += 1
        elif i >= len(left):
            result.append(right[j])
            j += 1
        else:
            li, ri = position.get(identity(left[i]), -1), position.get(identity(right[j]), -1)
            if li >= 0 and ri >= 0 and li < ri:
                result.append(left[i])
                i += 1
            else:
                result.append(right[j])
                j += 1
    return result
