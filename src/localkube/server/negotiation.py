"""Content negotiation: an object or a list in the form the request's Accept header asks for — itself, a
`Table` (kubectl get), or `PartialObjectMetadata` (metadata-only informers) — and replies in JSON.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from localkube.server import bodies
from localkube.server.registry import ResourceType
from localkube.server.routing import JSON, Reply, Request, StreamReply
from localkube.server.tables import table


def json_reply(obj: Any, status: int = 200) -> Reply:
    return Reply(status, orjson.dumps(obj))


def json_or_text(result: tuple[int, Any]) -> Reply | StreamReply:
    """A subresource's answer: an object in JSON, a text, or a text stream (pods/log)."""
    code, body = result
    if isinstance(body, str):
        return Reply(code, body.encode(), "text/plain")
    if isinstance(body, AsyncIterator):
        return StreamReply(body, "text/plain")
    return json_reply(body, code)


def decode(request: Request) -> dict[str, Any]:
    return bodies.decode(request.body, request.headers.get("content-type", JSON))


def table_include(request: Request) -> str | None:
    """What a Table's rows carry of their objects (`includeObject`), or None when no Table is asked for."""
    if "as=Table" not in request.headers.get("accept", ""):
        return None
    return request.query.get("includeObject", "Metadata")


def _partial(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}


def object_reply(
    request: Request, resource_type: ResourceType, obj: dict[str, Any], status: int = 200
) -> Reply:
    include = table_include(request)
    if include is not None:
        meta = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
        return json_reply(table(resource_type, [obj], meta, include), status)
    if "as=PartialObjectMetadata" in request.headers.get("accept", ""):
        return json_reply(_partial(obj.get("metadata", {})), status)
    return json_reply(obj, status)


def list_reply(
    request: Request, resource_type: ResourceType, objects: list[dict[str, Any]], metadata: dict[str, Any]
) -> Reply:
    include = table_include(request)
    if include is not None:
        return json_reply(table(resource_type, objects, metadata, include))
    if "as=PartialObjectMetadataList" in request.headers.get("accept", ""):
        items = [_partial(o["metadata"]) for o in objects]
        kind, api_version = "PartialObjectMetadataList", "meta.k8s.io/v1"
    else:
        items, kind, api_version = (
            typed_items(resource_type, objects),
            resource_type.list_kind,
            resource_type.api_version,
        )
        if resource_type.custom:
            # An unstructured list always writes its continue token, empty on the last page.
            metadata = {**metadata, "continue": metadata.get("continue", "")}
    return json_reply({"kind": kind, "apiVersion": api_version, "metadata": metadata, "items": items})


def typed_items(resource_type: ResourceType, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A list's items as the API server encodes them: a built-in kind's typed list leaves out each item's
    apiVersion and kind (the list names them); a custom resource's items keep theirs."""
    if resource_type.custom:
        return objects
    return [{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")} for obj in objects]
