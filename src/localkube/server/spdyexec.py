"""pods/exec and pods/attach over SPDY/3.1 streams, as the kubelet serves them to client-go's SPDY executor.

After the 101 (`spdyupgrade.py`) the client opens one stream per use, each named by its `streamType` header:
`error` always, `stdin`, `stdout`, `stderr` as the options ask (no `stderr` with a TTY), and `resize` with
a TTY from v3 on. Each gets its SYN_REPLY; the command starts once all have come (the kubelet waits
`STREAM_CREATION_TIMEOUT` for them, then gives up and closes). A stream of any other type is answered and
ignored, as the kubelet does; a second stream of a type already open is reset.

`SpdyChannels` presents those streams as the WebSocket channel messages `remotecommand.serve` reads and
writes, so one session serves both: stdin data (and its FIN, the end of stdin) and the resize stream's JSON
sizes in, stdout, stderr and the error stream's status out. The protocols are the kubelet's
(`v4.channel.k8s.io`: the error stream carries a Status, with the exit code as its `ExitCode` cause; v3, v2
and `channel.k8s.io`: a failure's text). At the end every stream gets its FIN (the error stream last: the
client reads it to its end once stdout and stderr are over), then GOAWAY, and the connection closes once
the client has closed its end (or after `LINGER` seconds).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

import orjson

from localkube.server import remotecommand, spdy
from localkube.server.spdyupgrade import SpdyUpgrade
from localkube.server.streams import Disconnected

log = logging.getLogger(__name__)

# What the kubelet serves over SPDY, its most preferred first (client-go's SPDY executor offers v5 first too;
# v5 is WebSocket-only).
PROTOCOLS = remotecommand.PROTOCOLS[1:]
# The kubelet's default --streaming-connection stream creation timeout.
STREAM_CREATION_TIMEOUT = 30.0
LINGER = 5.0
STREAM_TYPES = ("error", "stdin", "stdout", "stderr", "resize")
_OUTPUT = {remotecommand.STDOUT: "stdout", remotecommand.STDERR: "stderr", remotecommand.ERROR: "error"}
# The order streams are ended in: the error stream after the output the client waits for first.
_END_ORDER = ("stdout", "stderr", "stdin", "resize", "error")


def expected_streams(options: remotecommand.ExecOptions, protocol: str) -> frozenset[str]:
    """The streams the client opens for these options (client-go's createStreams; the kubelet's count)."""
    wanted = {"error"}
    if options.stdin:
        wanted.add("stdin")
    if options.stdout:
        wanted.add("stdout")
    if options.stderr and not options.tty:
        wanted.add("stderr")
    if options.tty and protocol in PROTOCOLS[:2]:
        wanted.add("resize")
    return frozenset(wanted)


class SpdyChannels:
    """One exec session's SPDY streams as channel messages (`streams.Messages`)."""

    def __init__(self, connection: SpdyUpgrade, expected: frozenset[str]) -> None:
        self._connection = connection
        self._expected = expected
        self._reader = spdy.FrameReader()
        self._writer = spdy.FrameWriter()
        self._streams: dict[str, int] = {}  # stream type -> id
        self._types: dict[int, str] = {}  # id -> stream type, for the streams in use
        self._finished: set[int] = set()  # this side's half is over (FIN sent, or the client reset it)
        self._last_stream = 0
        self._messages: deque[bytes] = deque()  # read, not yet received
        self._resizes = bytearray()
        self.closed = False

    async def wait_for_streams(self, timeout: float) -> None:
        """Reads frames until every expected stream is open; Disconnected when the client goes first,
        TimeoutError after `timeout`."""
        async with asyncio.timeout(timeout):
            while not self._expected <= self._streams.keys():
                await self._read()

    async def receive(self) -> bytes:
        while not self._messages:
            await self._read()
        return self._messages.popleft()

    async def send(self, data: bytes) -> None:
        """A channel message (stdout, stderr, error) onto its stream; dropped when that stream is not open."""
        stream = self._streams.get(_OUTPUT.get(data[0], "")) if data else None
        if stream is not None and stream not in self._finished:
            await self._connection.send(self._writer.data(stream, data[1:]))

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            for kind in _END_ORDER:
                stream = self._streams.get(kind)
                if stream is not None and stream not in self._finished:
                    self._finished.add(stream)
                    await self._connection.send(self._writer.data(stream, b"", fin=True))
            await self._connection.send(self._writer.goaway(self._last_stream))
        except Disconnected:
            pass
        await self._connection.close(LINGER)

    async def _read(self) -> None:
        data = await self._connection.receive()
        try:
            for frame in self._reader.feed(data):
                await self._handle(frame)
        except spdy.ProtocolError as bad:
            log.warning("closing a SPDY exec session: %s", bad)
            await self._connection.close()
            raise Disconnected from None

    async def _handle(self, frame: spdy.Frame) -> None:
        if frame.kind == 0:
            self._data(self._types.get(frame.stream), frame)
        elif frame.kind == spdy.SYN_STREAM:
            await self._open(frame)
        elif frame.kind == spdy.RST_STREAM:
            kind = self._types.pop(frame.stream, None)
            self._finished.add(frame.stream)
            if kind == "stdin":
                self._messages.append(bytes([remotecommand.CLOSE, remotecommand.STDIN]))
        elif frame.kind == spdy.PING:
            await self._connection.send(self._writer.ping(frame.payload[:4]))
        elif frame.kind == spdy.GOAWAY:
            raise Disconnected

    async def _open(self, frame: spdy.Frame) -> None:
        kind = (frame.headers or {}).get("streamtype", "")
        self._last_stream = max(self._last_stream, frame.stream)
        if kind in self._streams:
            await self._connection.send(self._writer.rst_stream(frame.stream, spdy.PROTOCOL_ERROR))
            return
        if kind in STREAM_TYPES:
            self._streams[kind] = frame.stream
            self._types[frame.stream] = kind
        else:
            log.warning("an exec stream of unexpected type %r (answered, not used)", kind)
        await self._connection.send(self._writer.syn_reply(frame.stream, {}))

    def _data(self, kind: str | None, frame: spdy.Frame) -> None:
        """The client's bytes: stdin (its FIN ends stdin) and terminal sizes; any other stream's are dropped."""
        if kind == "stdin":
            if frame.payload:
                self._messages.append(bytes([remotecommand.STDIN]) + frame.payload)
            if frame.fin:
                self._messages.append(bytes([remotecommand.CLOSE, remotecommand.STDIN]))
        elif kind == "resize":
            self._resizes += frame.payload
            self._sizes()

    def _sizes(self) -> None:
        """Each complete line of the resize stream as one resize message: client-go's json.Encoder writes
        one JSON object a line. A line that is not one ends the resizes, as the kubelet's decoder stops at
        its first error."""
        *lines, rest = bytes(self._resizes).split(b"\n")
        self._resizes[:] = rest
        for line in filter(bytes.strip, lines):
            try:
                size = orjson.loads(line)
            except orjson.JSONDecodeError:
                self._types = {ident: kind for ident, kind in self._types.items() if kind != "resize"}
                return
            self._messages.append(bytes([remotecommand.RESIZE]) + orjson.dumps(size))


async def serve(
    connection: SpdyUpgrade,
    protocol: str,
    options: remotecommand.ExecOptions,
    start: Callable[[tuple[int, int] | None], Awaitable[remotecommand.Process]],
) -> None:
    """Runs one exec or attach session on an accepted SPDY connection: once the client has opened its
    streams, the command, as over a WebSocket."""
    channels = SpdyChannels(connection, expected_streams(options, protocol))
    try:
        await channels.wait_for_streams(STREAM_CREATION_TIMEOUT)
    except (Disconnected, TimeoutError) as ended:
        if isinstance(ended, TimeoutError):
            log.warning("timed out waiting for client to create streams")
        await channels.close()
        return
    await remotecommand.serve(channels, protocol, options, start, stdin_ends=True)
