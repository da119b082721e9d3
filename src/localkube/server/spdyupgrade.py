"""Switching an HTTP/1.1 connection to SPDY/3.1, which ASGI has no messages for.

uvicorn gives an `Upgrade: websocket` request to its WebSocket protocol; any other upgrade reaches the
application as an ordinary request, and once it is answered the connection is unusable (its parser stops at
the upgrade). `HttpProtocol`, uvicorn's httptools protocol given to uvicorn as its `http` class, puts an
`SpdyUpgrade` in the scope of a request with `Connection: Upgrade` and `Upgrade: SPDY/3.1` (the extension
`EXTENSION`, read with `requested`). The application checks the request as the kubelet does, then either
answers it as usual (a refusal, after which the connection closes) or calls `accept`: that writes
`101 Switching Protocols` (with `X-Stream-Protocol-Version`, the protocol `handshake` chose, as
httpstream.Handshake does) and moves the connection to a `_RawConnection`, which carries bytes both ways
with flow control until either side closes. What the client sent after its request and before the 101 is
kept and comes first.

The SPDY frames are the caller's (`spdy.py`; the exec streams in `spdyexec.py`, port-forward in
`portforward.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from localkube.server.errors import ApiError
from localkube.server.routing import Scope
from localkube.server.streams import Disconnected

EXTENSION = "localkube.spdy"
PROTOCOL_HEADER = "x-stream-protocol-version"
# What the peer sent that this side has not read: reading the socket pauses at the high mark and resumes at
# the low one, so a reader that falls behind slows its peer down (TCP) rather than growing this buffer.
READ_HIGH_WATER = 1024 * 1024
READ_LOW_WATER = READ_HIGH_WATER // 2


class _RawConnection(asyncio.Protocol):
    """The connection after the 101: the peer's bytes in order, this side's written as they are sent."""

    def __init__(self, transport: asyncio.Transport, connections: set[Any], write_paused: bool) -> None:
        self._transport = transport
        self._connections = connections
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._reading_paused = False
        self._discarding = False
        self._ended = False
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        if not write_paused:
            self._writable.set()
        self.lost = asyncio.Event()

    # -- asyncio.Protocol ---------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._discarding or not data:
            return
        self._chunks.append(data)
        self._size += len(data)
        self._readable.set()
        if self._size >= READ_HIGH_WATER and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()

    def eof_received(self) -> bool | None:
        self._ended = True
        self._readable.set()
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        self._readable.set()
        self._writable.set()
        self.lost.set()
        self._connections.discard(self)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def shutdown(self) -> None:
        """uvicorn's, when the server stops: the connection ends with it."""
        self._transport.close()

    # -- the session's side -------------------------------------------------------------------------------

    async def receive(self) -> bytes:
        while not self._chunks:
            if self._ended:
                raise Disconnected
            self._readable.clear()
            await self._readable.wait()
        data = self._chunks.popleft()
        self._size -= len(data)
        if self._reading_paused and self._size <= READ_LOW_WATER:
            self._reading_paused = False
            self._transport.resume_reading()
        return data

    async def send(self, data: bytes) -> None:
        """Writes at once (so frames leave in the order they are sent), then waits while the socket's buffer
        is full."""
        if self.lost.is_set() or self._transport.is_closing():
            raise Disconnected
        self._transport.write(data)
        await self._writable.wait()

    async def close(self, linger: float) -> None:
        """Closes the connection, first giving the peer up to `linger` seconds to close its end: a socket
        closed with the peer's bytes unread is reset, and a reset can destroy what the peer has not read yet
        of this side's last frames. What arrives meanwhile is dropped."""
        self._discarding = True
        self._chunks.clear()
        self._size = 0
        if self._reading_paused:
            self._reading_paused = False
            self._transport.resume_reading()
        if linger > 0 and not self.lost.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.lost.wait(), linger)
        self._transport.close()


class SpdyUpgrade:
    """One request's upgrade to SPDY/3.1: `accept` switches; then bytes both ways (`receive`, `send`)."""

    def __init__(self, http: HttpProtocol) -> None:
        self._http: HttpProtocol | None = http
        self._raw: _RawConnection | None = None
        self.closed = False

    async def accept(self, protocol: str | None) -> None:
        """Answers 101 and takes the connection over; `protocol` goes back as X-Stream-Protocol-Version."""
        assert self._http is not None, "accepted twice"
        head = ["HTTP/1.1 101 Switching Protocols", "Connection: Upgrade", "Upgrade: SPDY/3.1"]
        if protocol:
            head.append(f"X-Stream-Protocol-Version: {protocol}")
        self._raw = self._http.take_over(("\r\n".join(head) + "\r\n\r\n").encode())
        self._http = None

    async def receive(self) -> bytes:
        """The next bytes the client sent; Disconnected once it has closed."""
        if self._raw is None:
            raise Disconnected
        return await self._raw.receive()

    async def send(self, data: bytes) -> None:
        if self._raw is None or self.closed:
            raise Disconnected
        await self._raw.send(data)

    async def close(self, linger: float = 0.0) -> None:
        """Ends the connection (see `_RawConnection.close` for `linger`); before `accept`, nothing."""
        if self.closed or self._raw is None:
            return
        self.closed = True
        await self._raw.close(linger)


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol, with SPDY/3.1 upgrades handed to the application (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._spdy_requested = False
        # After a SPDY upgrade request, until the application has answered it: what the client sent next.
        self._held: bytearray | None = None

    def on_headers_complete(self) -> None:
        self._spdy_requested = (self._get_upgrade() or b"").strip() == b"spdy/3.1"
        if self._spdy_requested:
            self.scope["extensions"] = {
                **self.scope.get("extensions", {}),
                EXTENSION: {"upgrade": SpdyUpgrade(self)},
            }
        super().on_headers_complete()
        if self._spdy_requested:
            # Answered rather than switched, the connection closes: its parser has stopped at the upgrade.
            self.cycle.keep_alive = False

    def data_received(self, data: bytes) -> None:
        if self._held is not None:
            self._held += data
            if len(self._held) >= READ_HIGH_WATER:
                self.transport.pause_reading()  # until the switch (or the answer that closes)
            return
        # uvicorn's own, except at a SPDY upgrade: it drops what follows the request (the offset the parser
        # stopped at), which belongs to the upgraded connection.
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.logger.warning("Invalid HTTP request received.")
            self.send_400_response("Invalid HTTP request received.")
        except httptools.HttpParserUpgrade as upgrade:
            if self._spdy_requested:
                self._held = bytearray(data[upgrade.args[0] :])
            elif self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()

    def take_over(self, head: bytes) -> _RawConnection:
        """Writes `head` (the 101) and gives the connection to a `_RawConnection`; uvicorn then neither
        answers the request nor reads the connection again."""
        self.cycle.response_started = self.cycle.response_complete = True
        self._unset_keepalive_if_required()
        self.connections.discard(self)
        raw = _RawConnection(self.transport, self.connections, self.flow.write_paused)
        # uvicorn's server asks each of these to `shutdown()` when it stops, and waits for them to go.
        self.connections.add(raw)  # type: ignore[arg-type]
        self.transport.write(head)
        self.transport.set_protocol(raw)
        held, self._held = bytes(self._held or b""), None
        raw.data_received(held)
        self.transport.resume_reading()
        return raw


def requested(scope: Scope) -> SpdyUpgrade | None:
    """The request's SPDY upgrade, when it asks for one and the server can switch."""
    extension = (scope.get("extensions") or {}).get(EXTENSION)
    upgrade = extension.get("upgrade") if extension else None
    return upgrade if isinstance(upgrade, SpdyUpgrade) else None


def offered(headers: Iterable[tuple[bytes, bytes]]) -> list[str] | None:
    """The X-Stream-Protocol-Version values (repeated, or comma-separated), in the client's order; None when
    the header is missing."""
    values = [value.decode("latin-1") for name, value in headers if name.lower() == PROTOCOL_HEADER.encode()]
    if not values:
        return None
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def handshake(offered: list[str] | None, supported: Sequence[str], header_count: int) -> str:
    """The protocol httpstream.Handshake (the kubelet's) picks: the client's first the server supports; its
    refusals otherwise."""
    if offered is None:
        raise ApiError(
            400,
            "BadRequest",
            f"unable to upgrade: header X-Stream-Protocol-Version does not exist in request with "
            f"{header_count} headers",
        )
    chosen = next((protocol for protocol in offered if protocol in supported), None)
    if chosen is None:
        raise ApiError(
            403,
            "Forbidden",
            f"unable to upgrade: unable to negotiate protocol: client supports [{' '.join(offered)}], "
            f"server accepts [{' '.join(supported)}]",
        )
    return chosen
