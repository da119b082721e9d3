"""What a request is once the server has read and routed it, and what a handler answers with.

Shared by the application (`app.py`) and the handlers it routes to (`subresources.py` and the streaming
subresources), so that none of them needs to import the application: a `Request` as read off the wire, the
`Target` a resource path names, the `Reply` or `StreamReply` a handler returns, and the RBAC verb of a
request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from localkube.server import bodies
from localkube.server.rbac import UserInfo
from localkube.server.registry import ResourceType

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON = bodies.JSON


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    # The Impersonate-* headers, repeats kept (`headers` keeps one value per name).
    impersonation: tuple[tuple[str, str], ...] = ()
    user: UserInfo | None = None
    # Set once a resource request is routed (the audit log names the object and the verb).
    target: Target | None = None
    verb: str = ""


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes
    content_type: str = JSON
    # Sent as `Warning: 299 - "<text>"` headers (admission webhooks' warnings).
    warnings: tuple[str, ...] = ()


@dataclass(slots=True)
class StreamReply:
    chunks: AsyncIterator[bytes]
    content_type: str = JSON


@dataclass(slots=True)
class Target:
    """A resource request after routing."""

    resource_type: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def request_verb(method: str, target: Target | None, query: dict[str, str]) -> str:
    """The Kubernetes verb of a request, as RBAC names it."""
    if method in ("GET", "HEAD"):
        if target is not None and target.name is None:
            return "watch" if query.get("watch") in ("true", "1") else "list"
        return "get"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(
        method, "delete" if target is None or target.name is not None else "deletecollection"
    )
