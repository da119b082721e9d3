"""The raw ASGI side of the server: reading a request's body, sending a reply or a stream, the lifespan
protocol. Nothing here knows Kubernetes; `app.py` turns what these read into requests and answers them.
"""

from __future__ import annotations

import asyncio
import logging

from localkube.server.errors import ServingError
from localkube.server.routing import Receive, Reply, Scope, Send, StreamReply

log = logging.getLogger("localkube.server")


class ClientGone(ServingError):
    """The client went away before its request's body was whole."""


def headers_of(scope: Scope) -> dict[str, str]:
    """A request's headers by lower-case name (a repeated header keeps its last value)."""
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


async def read_body(receive: Receive, limit: int | None) -> bytes | None:
    """The request's body, or None once it grows past `limit` (the rest is not read). A request whose client
    went before sending all of it is not carried out (`ClientGone`), as kube-apiserver fails to read it: a
    DELETE cut short of its options must not run as one without them."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def warning_header(text: str) -> bytes:
    """A `Warning` header value as kube-apiserver writes it: code 299, no agent, the text quoted."""
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{quoted}"'.encode()


async def send_reply(reply: Reply, send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": reply.status,
            "headers": [
                (b"content-type", reply.content_type.encode()),
                (b"content-length", str(len(reply.body)).encode()),
                *((b"warning", warning_header(text)) for text in reply.warnings),
            ],
        }
    )
    await send({"type": "http.response.body", "body": reply.body})


async def send_stream(reply: StreamReply, receive: Receive, send: Send) -> None:
    """Sends a streaming body until it ends or the client goes away, whichever is first."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", reply.content_type.encode()),
                (b"cache-control", b"no-cache, private"),
            ],
        }
    )

    async def pump() -> None:
        async for chunk in reply.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    pumping = asyncio.ensure_future(pump())
    watching = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({pumping, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pumping, watching):
            task.cancel()
        await asyncio.gather(pumping, watching, return_exceptions=True)
        aclose = getattr(reply.chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    if pumping.done() and not pumping.cancelled():
        failure = pumping.exception()
        if failure is not None:
            log.error("a streaming reply failed", exc_info=failure)
        else:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
