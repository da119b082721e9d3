"""RFC 6902 JSON patches and RFC 7386 merge patches, with the behaviour and texts the API server has.

The API server applies JSON patches with evanphx/json-patch (v4), so its quirks are kept: `replace` of a
missing object key adds it, `test` of a missing key passes only against null, negative array indexes count
from the end, and error texts are that library's. Inputs are never mutated.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesemantics.jsonvalue import json_equal
from localkube.patch.errors import PatchError

_OPS = ("add", "remove", "replace", "move", "copy", "test")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _container(doc: Any, path: str) -> tuple[Any, str] | None:
    """The container holding the last token of `path`, and that token; None when a parent is missing."""
    tokens = path.split("/")
    if len(tokens) < 2:
        return None
    node = doc
    for token in tokens[1:-1]:
        key = _unescape(token)
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list):
            index = _index(key, len(node))
            node = node[index] if index is not None and 0 <= index < len(node) else None
        else:
            return None
        if not isinstance(node, (dict, list)):
            return None
    return node, _unescape(tokens[-1])


def _index(key: str, size: int) -> int | None:
    try:
        index = int(key)
    except ValueError:
        return None
    return index + size if index < 0 else index


def _invalid_index(key: str) -> str:
    return f"Unable to access invalid index: {key}: invalid index referenced"


def _get(container: Any, key: str) -> tuple[bool, Any]:
    """(found, value); a list index out of range raises PatchError, as the library does."""
    if isinstance(container, dict):
        return key in container, container.get(key)
    index = _index(key, len(container))
    if index is None:
        raise PatchError(f'strconv.Atoi: parsing "{key}": invalid syntax')
    if not 0 <= index < len(container):
        raise PatchError(_invalid_index(key))
    return True, container[index]


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    index = _index(key, len(container) + 1)
    if index is None:
        raise PatchError(
            f"value was not a proper array index: '{key}': strconv.Atoi: parsing \"{key}\": invalid syntax"
        )
    if not 0 <= index <= len(container):
        raise PatchError(_invalid_index(key))
    container.insert(index, value)


def _remove(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        if key not in container:
            raise PatchError(f"Unable to remove nonexistent key: {key}: missing value")
        return container.pop(key)
    _, value = _get(container, key)
    index = _index(key, len(container))
    assert index is not None
    del container[index]
    return value


def _path(op: dict[str, Any], field: str, name: str) -> str:
    value = op.get(field)
    if not isinstance(value, str):
        raise PatchError(
            f"{name} operation failed to decode {'path' if field == 'path' else 'from'}: missing value"
        )
    return value


def _apply_op(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if kind not in _OPS:
        raise PatchError(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
    path = _path(op, "path", str(kind))
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchError("operation, missing value field: missing value")
    value = copy.deepcopy(op.get("value"))

    if kind == "replace" and path == "":
        if not isinstance(value, (dict, list)):
            raise PatchError("replace operation value must be object or array: <nil>")
        return value
    if kind == "test" and path == "":
        if not json_equal(doc, value):
            raise PatchError(f"testing value {path} failed: test failed")
        return doc

    target = _container(doc, path)
    if kind == "add":
        if target is None:
            raise PatchError(f'add operation does not apply: doc is missing path: "{path}": missing value')
        _wrap(lambda: _add(target[0], target[1], value), f"error in add for path: '{path}'")
    elif kind == "remove":
        if target is None:
            raise PatchError(f'remove operation does not apply: doc is missing path: "{path}": missing value')
        _wrap(lambda: _remove(target[0], target[1]), f"error in remove for path: '{path}'")
    elif kind == "replace":
        if target is None:
            raise PatchError(f"replace operation does not apply: doc is missing path: {path}: missing value")
        container, key = target
        if isinstance(container, list):
            try:
                _get(container, key)
            except PatchError:
                raise PatchError(
                    f"replace operation does not apply: doc is missing key: {path}: missing value"
                ) from None
            container[_index(key, len(container)) or 0] = value
        else:
            container[key] = value
    elif kind == "test":
        if target is None:
            raise PatchError(f"test operation does not apply: is missing path: {path}: missing value")
        found, current = _wrap(lambda: _get(target[0], target[1]), f"error in test for path: '{path}'")
        if not json_equal(current if found else None, value):
            raise PatchError(f"testing value {path} failed: test failed")
    else:
        _move_or_copy(doc, op, str(kind), path)
    return doc


def _move_or_copy(doc: Any, op: dict[str, Any], kind: str, path: str) -> None:
    source = _path(op, "from", kind)
    origin = _container(doc, source)
    if origin is None:
        raise PatchError(
            f"{kind} operation does not apply: doc is missing from path: {source}: missing value"
        )
    if kind == "move":
        _, moved = _wrap(lambda: _get(origin[0], origin[1]), f"error in move for path: '{origin[1]}'")
        _wrap(lambda: _remove(origin[0], origin[1]), f"error in move for path: '{origin[1]}'")
    else:
        _, found = _wrap(lambda: _get(origin[0], origin[1]), f"error in copy for from: '{source}'")
        moved = copy.deepcopy(found)
    target = _container(doc, path)
    if target is None:
        raise PatchError(
            f"{kind} operation does not apply: doc is missing destination path: {path}: missing value"
        )
    context = (
        f"error in move for path: '{path}'" if kind == "move" else "error while adding value during copy"
    )
    _wrap(lambda: _add(target[0], target[1], moved), context)


def _wrap(action: Any, context: str) -> Any:
    try:
        return action()
    except PatchError as error:
        raise PatchError(f"{context}: {error.detail}") from None


def json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """`doc` with the RFC 6902 operations applied in order; PatchError (422) when one does not apply."""
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch", code=400)
    result: Any = copy.deepcopy(doc)
    for op in ops:
        result = _apply_op(result, op)
    if not isinstance(result, dict):
        raise PatchError("the patched object is not a JSON object")
    return dict(result)


def merge_patch(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`doc` with an RFC 7386 merge patch applied: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        raise PatchError("Invalid JSON Patch", code=400)
    merged = _merge(copy.deepcopy(doc), patch)
    assert isinstance(merged, dict)
    return merged


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result
