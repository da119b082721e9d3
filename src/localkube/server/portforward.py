"""pods/portforward over WebSocket, in the two forms clients use, and over SPDY/3.1.

    GET /api/v1/namespaces/{ns}/pods/{name}/portforward[?ports=8080&ports=9090]   (Upgrade: websocket)
    POST /api/v1/namespaces/{ns}/pods/{name}/portforward   (Upgrade: SPDY/3.1, X-Stream-Protocol-Version:
                                                            portforward.k8s.io)

- `SPDY/3.1+portforward.k8s.io` (kubectl 1.31+; 1.30 named it `v2.portforward.k8s.io`): a SPDY/3.1
  session tunnelled through the WebSocket (`spdy.py`); the same session directly on the connection after a
  SPDY upgrade (`spdyupgrade.py`; client-go's spdy.NewDialer, kubectl before 1.30). For every local
  connection the client opens an `error` stream and a `data` stream with the headers `streamType`, `port`
  and `requestID` (without one, the kubelet's guess from the stream ids: an error stream's own, a data
  stream's minus 2); a stream without a valid port or type is reset. Once both of a request are there the
  pod's port is dialled and the data stream carries the bytes both ways, each side ending its half with
  FIN. A dial that fails writes its reason to the error stream. Connections are independent: any number
  side by side.
- `v4.channel.k8s.io` or no subprotocol (the official Python client and other WebSocket clients): the ports
  come from the query; port i has the data channel 2i and the error channel 2i+1, each of which first
  carries the port number (2 bytes, little-endian); then a message on a data channel is `[channel, data]`.
  One connection per port for the WebSocket's lifetime.

Either way the pod's port is reached at `localhost` inside the pod's network namespace
(`localkube.node.exec.dial`), and everything ends with the WebSocket: no connection to the pod outlives it.

What a client sends waits in its connection's `_Upload` until the pod reads it. Once one holds
`UPLOAD_HIGH_WATER` bytes, the session reads nothing more from its WebSocket until that upload is down to
`UPLOAD_LOW_WATER`: uvicorn then stops reading the socket, and TCP slows the client to the pod's pace, as a
kubelet's SPDY session does (spdystream's frame queues are bounded, and its reader waits when one is full).
Without that, a client faster than its pod grew localkube's memory by whatever it sent. As there, the
connections of one session share its WebSocket: one whose pod does not read holds up the others' uploads
(never their downloads) until it drains or ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from localkube.node.exec import Connection
from localkube.server import errors, spdy
from localkube.server.streams import Disconnected, Messages

log = logging.getLogger(__name__)

# The SPDY tunnel: its name since Kubernetes 1.31, the name kubectl 1.30's alpha tunnel used, and SPDY's own
# port-forward protocol name (a WebSocket port-forward by that name can only be the tunnel).
TUNNEL_PROTOCOLS = ("SPDY/3.1+portforward.k8s.io", "v2.portforward.k8s.io", "portforward.k8s.io")
CHANNEL_PROTOCOLS = ("v4.channel.k8s.io",)
PROTOCOLS = (*TUNNEL_PROTOCOLS, *CHANNEL_PROTOCOLS)
# The X-Stream-Protocol-Version of a SPDY upgrade (the kubelet's SupportedPortForwardProtocols).
SPDY_PROTOCOLS = ("portforward.k8s.io",)
READ_SIZE = 32 * 1024
# A connection's bytes from the client not yet read by its pod: reading the WebSocket pauses at the high mark
# and resumes at the low one (a few socket buffers' worth: enough to keep a pod that reads fast busy).
UPLOAD_HIGH_WATER = 1024 * 1024
UPLOAD_LOW_WATER = UPLOAD_HIGH_WATER // 2
Dial = Callable[[int], Awaitable[Connection]]


class _Upload:
    """The bytes a client sent on one connection that its pod has not read yet, then the client's end.

    `put` and `end` never wait: one loop receives for every connection of a session. That loop awaits
    `room()` before it reads the WebSocket again, which is how a slow pod slows its client down. `close()`
    is for a connection whose pod side is over: what is left is dropped, as is what comes after, so the
    loop never waits on a buffer nobody reads."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._ended = False
        self._closed = False
        self._readable = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()

    @property
    def full(self) -> bool:
        """At its high mark: the session must wait for `room()` before it reads its WebSocket again."""
        return not self._room.is_set()

    def put(self, data: bytes) -> None:
        if self._closed or not data:
            return
        self._chunks.append(data)
        self._size += len(data)
        self._readable.set()
        if self._size >= UPLOAD_HIGH_WATER:
            self._room.clear()

    def end(self) -> None:
        """The client's half is over (FIN, or the stream reset): `get` returns None once it is drained."""
        self._ended = True
        self._readable.set()

    def close(self) -> None:
        self._closed = True
        self._chunks.clear()
        self._size = 0
        self._readable.set()
        self._room.set()

    async def get(self) -> bytes | None:
        """The next bytes in the order they came; None at the client's end."""
        while not self._chunks:
            if self._ended or self._closed:
                return None
            self._readable.clear()
            await self._readable.wait()
        data = self._chunks.popleft()
        self._size -= len(data)
        if self._size <= UPLOAD_LOW_WATER:
            self._room.set()
        return data

    async def room(self) -> None:
        """Returns once this upload is below its high mark again (at once while it is)."""
        await self._room.wait()


def ports(values: list[str]) -> list[int]:
    """The `ports` query parameter (repeated, or comma-separated), checked as the kubelet checks it."""
    found = []
    for value in values:
        for item in value.split(","):
            text = item.strip()
            if not text:
                continue
            if not text.isdigit() or not 0 < int(text) < 65536:
                raise errors.bad_request(f"invalid port {text!r}: must be a number between 1 and 65535")
            found.append(int(text))
    return found


def _failure(port: int, pod: str, failure: BaseException) -> bytes:
    """What the error stream (or channel) says when a forward fails."""
    return f"error forwarding port {port} to pod {pod}: {str(failure) or type(failure).__name__}".encode()


# -- the SPDY tunnel -----------------------------------------------------------------------------------------


@dataclass
class _Stream:
    ident: int
    kind: str
    port: int
    request: str
    inbound: _Upload = field(default_factory=_Upload)


class _Tunnel:
    """One SPDY session (in a WebSocket, or on an upgraded connection): streams by id, forwards by request id."""

    def __init__(self, socket: Messages, dial: Dial, pod: str) -> None:
        self._socket = socket
        self._dial = dial
        self._pod = pod
        self._reader = spdy.FrameReader()
        self._writer = spdy.FrameWriter()
        self._streams: dict[int, _Stream] = {}
        self._requests: dict[str, dict[str, _Stream]] = {}
        self._forwards: set[asyncio.Task[None]] = set()
        # The uploads the last message filled: the WebSocket is read again once each has room.
        self._full: list[_Upload] = []

    async def run(self) -> None:
        try:
            while True:
                for frame in self._reader.feed(await self._socket.receive()):
                    if not await self._handle(frame):
                        return
                while self._full:
                    await self._full.pop().room()
        except (Disconnected, spdy.ProtocolError) as ended:
            if isinstance(ended, spdy.ProtocolError):
                log.warning("port-forward to %s: %s", self._pod, ended)
        finally:
            for task in self._forwards:
                task.cancel()
            await asyncio.gather(*self._forwards, return_exceptions=True)

    async def _handle(self, frame: spdy.Frame) -> bool:
        """Acts on one frame; False when the session is over."""
        if frame.kind == 0:
            stream = self._streams.get(frame.stream)
            if stream is not None:
                stream.inbound.put(frame.payload)
                if stream.inbound.full:
                    self._full.append(stream.inbound)
                if frame.fin:
                    stream.inbound.end()
        elif frame.kind == spdy.SYN_STREAM:
            await self._open(frame)
        elif frame.kind == spdy.RST_STREAM:
            stream = self._streams.pop(frame.stream, None)
            if stream is not None:
                stream.inbound.end()
        elif frame.kind == spdy.PING:
            await self._socket.send(self._writer.ping(frame.payload[:4]))
        elif frame.kind == spdy.GOAWAY:
            return False
        return True

    async def _open(self, frame: spdy.Frame) -> None:
        headers = frame.headers or {}
        kind, request = headers.get("streamtype", ""), headers.get("requestid", "")
        port = headers.get("port", "")
        if kind not in ("data", "error") or not port.isdigit() or not 0 < int(port) < 65536:
            await self._socket.send(self._writer.rst_stream(frame.stream, spdy.PROTOCOL_ERROR))
            return
        if not request:
            request = str(frame.stream if kind == "error" else frame.stream - 2)
        stream = _Stream(frame.stream, kind, int(port), request)
        if kind == "error":
            stream.inbound.close()  # only this side writes an error stream: what a client sends there is dropped
        self._streams[frame.stream] = stream
        await self._socket.send(self._writer.syn_reply(frame.stream, {}))
        pair = self._requests.setdefault(request, {})
        pair[kind] = stream
        if len(pair) == 2:
            del self._requests[request]
            task = asyncio.ensure_future(self._forward(pair["data"], pair["error"]))
            self._forwards.add(task)
            task.add_done_callback(self._forwards.discard)

    async def _send_data(self, stream: _Stream, data: bytes, fin: bool = False) -> None:
        await self._socket.send(self._writer.data(stream.ident, data, fin))

    async def _forward(self, data: _Stream, error: _Stream) -> None:
        """Ends both streams once the pod's side is over, as the kubelet does: the error stream first, carrying
        the reason when the dial or the connection failed (a connection the pod reset ends the client's
        connection too, rather than leaving it open with nothing behind it)."""
        try:
            failure = await self._pod_side(data)
            reason = b"" if failure is None else _failure(data.port, self._pod, failure)
            await self._send_data(error, reason, fin=True)
            await self._send_data(data, b"", fin=True)
        except Disconnected:
            pass
        finally:
            data.inbound.close()
            self._streams.pop(data.ident, None)
            self._streams.pop(error.ident, None)

    async def _pod_side(self, data: _Stream) -> Exception | None:
        """Dials the pod's port and copies both ways until the pod's side ends; why it failed, if it did."""
        try:
            reader, writer = await self._dial(data.port)
        except Exception as refused:
            return refused
        try:
            await _copy_both_ways(reader, writer, data.inbound, lambda chunk: self._send_data(data, chunk))
        except ConnectionError as lost:
            return lost
        finally:
            writer.close()
        return None


async def _copy_both_ways(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    inbound: _Upload,
    send: Callable[[bytes], Awaitable[None]],
) -> None:
    """Client bytes (from `inbound`, until the client's end) to the pod, the pod's bytes to `send`, until
    the pod's side has ended; the client's end half-closes the pod connection. A chunk is taken from
    `inbound` only once the one before it has drained into the pod connection (`drain`), so what the pod
    has not read waits in `inbound`, where it counts against the upload's bound."""

    async def upstream() -> None:
        while (chunk := await inbound.get()) is not None:
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    sending = asyncio.ensure_future(upstream())
    try:
        while chunk := await reader.read(READ_SIZE):
            await send(chunk)
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await sending


async def serve_tunnel(socket: Messages, dial: Dial, pod: str) -> None:
    await _Tunnel(socket, dial, pod).run()


# -- the channel protocol ------------------------------------------------------------------------------------


async def serve_channels(socket: Messages, dial: Dial, pod: str, wanted: list[int]) -> None:
    """One connection per port, on channels 2i (data) and 2i+1 (error), for the WebSocket's lifetime."""
    inbound: dict[int, _Upload] = {}
    tasks: list[asyncio.Future[None]] = []
    try:
        for index, port in enumerate(wanted):
            prefix = port.to_bytes(2, "little")
            await socket.send(bytes([2 * index]) + prefix)
            await socket.send(bytes([2 * index + 1]) + prefix)
    except Disconnected:
        return
    for index, port in enumerate(wanted):
        inbound[2 * index] = _Upload()
        tasks.append(
            asyncio.ensure_future(_forward_channel(socket, dial, pod, index, port, inbound[2 * index]))
        )
    everything: asyncio.Future[list[None]] = asyncio.gather(*tasks)
    receiving: asyncio.Future[None] = asyncio.ensure_future(_receive_channels(socket, inbound))
    try:
        either: list[asyncio.Future[Any]] = [everything, receiving]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if everything.done():
            await socket.close()
    except Disconnected:
        pass
    finally:
        everything.cancel()
        receiving.cancel()
        await asyncio.gather(everything, receiving, return_exceptions=True)


async def _receive_channels(socket: Messages, inbound: dict[int, _Upload]) -> None:
    while True:
        message = await socket.receive()
        upload = inbound.get(message[0]) if message else None
        if upload is not None:
            upload.put(message[1:])
            await upload.room()


async def _forward_channel(
    socket: Messages, dial: Dial, pod: str, index: int, port: int, inbound: _Upload
) -> None:
    try:
        try:
            reader, writer = await dial(port)
        except Exception as failure:
            await socket.send(bytes([2 * index + 1]) + _failure(port, pod, failure))
            return
        try:
            await _copy_both_ways(
                reader, writer, inbound, lambda chunk: socket.send(bytes([2 * index]) + chunk)
            )
        except ConnectionError as lost:
            await socket.send(bytes([2 * index + 1]) + _failure(port, pod, lost))
        finally:
            writer.close()
    finally:
        inbound.close()
