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

from localkube.patch import (
    ApplyConflict,
    PatchError,
    json_patch,
    merge_patch,
    record_update,
    server_side_apply,
    strategic_merge_patch,
)
from localkube.server import bodies, errors
from localkube.server.registry import ResourceType

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY)
_CUSTOM_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY]


def unknown_patch_type(resource_type: ResourceType) -> errors.ApiError:
    """A PATCH whose Content-Type is no patch type: a custom resource's handler lists the types it takes; a
    built-in kind's answers the bare 415 of its content negotiation."""
    if resource_type.custom:
        return errors.unsupported_media_type(_CUSTOM_PATCH_TYPES)
    return errors.ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


def _decode_json(body: bytes) -> Any:
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from exc
    bodies.check_depth(decoded, "error decoding patch")
    return decoded


def parse_apply(body: bytes) -> dict[str, Any]:
    """An apply configuration: JSON (what kubectl sends, and valid YAML) or YAML."""
    try:
        applied = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            applied = yaml.load(body, Loader=yaml.CSafeLoader)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from exc
    if not isinstance(applied, dict):
        raise errors.bad_request("error decoding YAML: the apply configuration must be an object")
    bodies.check_depth(applied, "error decoding YAML")
    return applied


def patch(
    document: dict[str, Any], body: bytes, content_type: str, gvk: tuple[str, str, str] | None
) -> dict[str, Any]:
    """`document` with a JSON, merge or strategic-merge patch applied (the input is not changed).

    `gvk` names the built-in kind whose schema drives a strategic merge; None for custom resources,
    which refuse strategic merge with 415 as on a real server."""
    decoded = _decode_json(body)
    try:
        if content_type == JSON_PATCH:
            if not isinstance(decoded, list):
                raise errors.bad_request("error decoding patch: a JSON patch must be a list of operations")
            patched = json_patch(document, decoded)
        elif not isinstance(decoded, dict):
            raise errors.bad_request("error decoding patch: a merge patch must be an object")
        elif content_type == MERGE_PATCH:
            patched = merge_patch(document, decoded)
        elif content_type == STRATEGIC_MERGE_PATCH:
            if gvk is None:
                raise errors.unsupported_media_type(_CUSTOM_PATCH_TYPES)
            patched = strategic_merge_patch(document, decoded, gvk)
        else:
            raise errors.unsupported_media_type(list(PATCH_TYPES))
    except PatchError as refused:
        raise errors.from_status(refused.status) from refused
    # A patch may place a deep value deep in the object: the sum is what the server must walk.
    bodies.check_depth(patched, "the patched object")
    return patched


def apply(
    resource_type: ResourceType,
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str,
    force: bool,
    subresource: str | None,
) -> dict[str, Any]:
    """Server-side apply of `applied` by `manager` onto `live` (None: the object is being created).

    The applied configuration is merged as sent: the manager owns what it applied, and the schema's defaults,
    filled in afterwards by admission, are nobody's (structured-merge-diff defaults the merged object, not
    the patch). List items whose key fields have defaults still match their live items: the list's shape
    carries the key defaults."""
    try:
        return server_side_apply(
            live,
            applied,
            manager,
            force,
            _gvk(resource_type),
            resource_type.schema,
            subresource=subresource or "",
        )
    except (ApplyConflict, PatchError) as refused:
        raise errors.from_status(refused.status) from refused


def record(
    resource_type: ResourceType,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    subresource: str | None,
) -> dict[str, Any]:
    """`new` with `manager` owning the fields this create, update or patch changed (managedFields)."""
    return record_update(
        old, new, manager, _gvk(resource_type), resource_type.schema, subresource=subresource or ""
    )


def _gvk(resource_type: ResourceType) -> tuple[str, str, str]:
    return resource_type.group, resource_type.version, resource_type.kind
