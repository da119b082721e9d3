"""Request bodies as dicts: JSON (the default), YAML, or the protobuf kubectl's typed commands send.

A body that cannot be decoded, that is not an object, or that nests deeper than `MAX_DEPTH` levels is
refused with 400 BadRequest (the depth bound is ours: see `kubesemantics.jsonvalue.MAX_DEPTH`).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import yaml

from kubesemantics import jsonvalue
from kubesemantics.jsonvalue import MAX_DEPTH
from localkube.server import errors, protobuf

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def decode(body: bytes, content_type: str) -> dict[str, Any]:
    if content_type.startswith(PROTOBUF):
        return protobuf.decode(body)
    try:
        decoded = (
            yaml.load(body, Loader=yaml.CSafeLoader)
            if "yaml" in content_type
            else orjson.loads(body or b"{}")
        )
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the request body could not be decoded: {exc}") from exc
    except RecursionError:  # YAML's composer recurses per level of nesting
        raise errors.bad_request(
            f"the request body could not be decoded: nested deeper than {MAX_DEPTH} levels"
        ) from None
    if not isinstance(decoded, dict):
        raise errors.bad_request("the request body must be an object")
    check_depth(decoded, "the request body could not be decoded")
    return decoded


def check_depth(value: Any, refusal: str) -> None:
    """Refuses (400) a value nested deeper than MAX_DEPTH, naming the field path where it goes too deep."""
    path = jsonvalue.too_deep(value)
    if path is not None:
        raise errors.bad_request(f"{refusal}: {path}: nested deeper than {MAX_DEPTH} levels")


def duplicate_fields(body: bytes, content_type: str, decoded: dict[str, Any]) -> list[str]:
    """The paths of the keys a JSON body repeats (`metadata.name`, `spec.ports[0].port`), which a decoder
    that keeps the last one hides (`decoded`, the body as `decode` read it); the API server's strict
    decoder names them."""
    if content_type.startswith(PROTOBUF) or "yaml" in content_type or _no_key_repeated(body, decoded):
        return []
    repeated: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in items:
            if key in obj:
                repeated.setdefault(id(obj), []).append(key)
            obj[key] = value
        return obj

    try:
        pairwise = json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):  # nested too deep for this decoder: the depth bound refuses it
        return []
    found: list[str] = []
    if repeated:
        _repeated_paths(pairwise, "", repeated, found)
    return found


def _no_key_repeated(body: bytes, decoded: dict[str, Any]) -> bool:
    """True when no object of `body` repeats a key, told without decoding it again: a repeated key and
    its earlier value are gone from `decoded`, so `decoded` encoded holds fewer strings than `body`, and
    where neither escapes a quote, every quote opens or closes a string. False when unsure (an escaped
    quote), and the caller then looks for the keys."""
    try:
        encoded = orjson.dumps(decoded)
    except orjson.JSONEncodeError:
        return False
    return b'\\"' not in body and b'\\"' not in encoded and body.count(b'"') == encoded.count(b'"')


def _repeated_paths(value: Any, path: str, repeated: dict[int, list[str]], found: list[str]) -> None:
    if isinstance(value, dict):
        found.extend(f"{path}.{key}" if path else key for key in repeated.get(id(value), ()))
        for key, child in value.items():
            _repeated_paths(child, f"{path}.{key}" if path else key, repeated, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _repeated_paths(item, f"{path}[{index}]", repeated, found)
