"""PATCH bodies: which patch type a Content-Type names, and applying it to the live object.

The four types of the real server: JSON patch, JSON merge patch, strategic merge patch (built-in kinds
only: custom resources answer 415, as on a real server) and server-side apply (YAML or JSON bodies, with a
field manager and conflicts). The algorithms live in `localkube.patch`; this module maps their failures
to the API server's replies.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from localkube.server import errors
from localkube.server.registry import ResourceType

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY)
_CUSTOM_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY]


def _decode_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from exc


def parse_apply(body: bytes) -> dict[str, Any]:
    try:
        applied = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from exc
    if not isinstance(applied, dict):
        raise errors.bad_request("error decoding YAML: the apply configuration must be an object")
    return applied


def patch(
    document: dict[str, Any], body: bytes, content_type: str, gvk: tuple[str, str, str] | None
) -> dict[str, Any]:
    """`document` with a JSON, merge or strategic-merge patch applied (the input is not changed).

    `gvk` names the built-in kind whose schema drives a strategic merge; None for custom resources,
    which refuse strategic merge with 415 as on a real server."""
    from localkube.patch import PatchError, json_patch, merge_patch, strategic_merge_patch

    decoded = _decode_json(body)
    try:
        if content_type == JSON_PATCH:
            if not isinstance(decoded, list):
                raise errors.bad_request("error decoding patch: a JSON patch must be a list of operations")
            return json_patch(document, decoded)
        if not isinstance(decoded, dict):
            raise errors.bad_request("error decoding patch: a merge patch must be an object")
        if content_type == MERGE_PATCH:
            return merge_patch(document, decoded)
        if content_type == STRATEGIC_MERGE_PATCH:
            if gvk is None:
                raise errors.unsupported_media_type(_CUSTOM_PATCH_TYPES)
            return strategic_merge_patch(document, decoded, gvk)
    except PatchError as exc:
        raise errors.ApiError(422, "Invalid", str(exc)) from exc
    raise errors.unsupported_media_type(list(PATCH_TYPES))


def apply(
    resource_type: ResourceType,
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str,
    force: bool,
) -> dict[str, Any]:
    """Server-side apply of `applied` by `manager` onto `live` (None: the object is being created)."""
    from localkube.patch import ApplyConflict, server_side_apply

    try:
        return server_side_apply(live, applied, manager, force)
    except ApplyConflict as exc:
        name = (applied.get("metadata") or {}).get("name", "")
        raise errors.ApiError(
            409,
            "Conflict",
            str(exc),
            {"name": name, "group": resource_type.group, "kind": resource_type.plural},
        ) from exc
