"""A WebSocket over one ASGI connection, for the streaming subresources (pods/exec, pods/portforward).

`WebSocket` turns the ASGI messages of one connection into accept / refuse (an HTTP reply with a Status
instead of the upgrade) / send / receive / close; `negotiate` picks the subprotocol. `Socket` is what a
session uses of it, which a SPDY/3.1 upgrade (`spdyupgrade.SpdyUpgrade`) offers too; `Messages` is the part
the exec session needs, which the SPDY exec streams (`spdyexec.py`) present as the WebSocket's channels.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Protocol

import orjson

from localkube.server.errors import ApiError, ServingError
from localkube.server.routing import Receive, Send


class Disconnected(ServingError):
    """The client closed the WebSocket."""


class Messages(Protocol):
    async def receive(self) -> bytes: ...

    async def send(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class Socket(Messages, Protocol):
    async def accept(self, subprotocol: str | None) -> None: ...


class WebSocket:
    """One ASGI WebSocket connection."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._lock = asyncio.Lock()
        self.closed = False

    async def accept(self, subprotocol: str | None) -> None:
        message = await self._receive()
        if message["type"] != "websocket.connect":
            raise Disconnected
        await self._send({"type": "websocket.accept", "subprotocol": subprotocol})

    async def refuse(self, error: ApiError) -> None:
        """Answers the upgrade request with the error's Status instead of switching protocols."""
        body = orjson.dumps(error.status())
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await self._send({"type": "websocket.http.response.start", "status": error.code, "headers": headers})
        await self._send({"type": "websocket.http.response.body", "body": body})

    async def receive(self) -> bytes:
        """The next message's bytes (text as UTF-8); Disconnected once the client has gone."""
        while True:
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                self.closed = True
                raise Disconnected
            if message["type"] == "websocket.receive":
                data = message.get("bytes")
                return data if data is not None else (message.get("text") or "").encode()

    async def send(self, data: bytes) -> None:
        """Sends a binary message; Disconnected when the client has gone (the server reports that as an
        OSError)."""
        async with self._lock:
            if self.closed:
                raise Disconnected
            try:
                await self._send({"type": "websocket.send", "bytes": data})
            except OSError:
                self.closed = True
                raise Disconnected from None

    async def close(self, code: int = 1000) -> None:
        async with self._lock:
            if not self.closed:
                self.closed = True
                with contextlib.suppress(OSError):  # the client went first
                    await self._send({"type": "websocket.close", "code": code})


def negotiate(offered: Sequence[str], supported: Sequence[str]) -> str | None:
    """The client's most preferred subprotocol this side supports; "" when the client offered none (the
    unversioned protocol); None when nothing matches."""
    if not offered:
        return ""
    return next((protocol for protocol in offered if protocol in supported), None)
