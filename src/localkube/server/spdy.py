"""SPDY/3.1 framing, as far as exec, attach and port-forward need it from a server.

A SPDY session comes two ways: an HTTP connection switched by `Upgrade: SPDY/3.1` (`spdyupgrade.py`;
client-go's SPDY executor and dialer), or the binary messages of a WebSocket whose subprotocol is
`SPDY/3.1+portforward.k8s.io` (kubectl 1.30+ port-forward; no HTTP upgrade inside). In either the client
opens the streams (exec: `spdyexec.py`; port-forward: `portforward.py`). This module reads and writes the
session's frames:

- a control frame: `1 | version(15) | type(16) | flags(8) | length(24) | payload`;
- a data frame: `0 | stream id(31) | flags(8) | length(24) | payload`;
- SYN_STREAM and SYN_REPLY carry a header block, compressed with one zlib stream per direction for the
  whole session, primed with the protocol's dictionary. A block is `count(32)` then `count` pairs of
  `length(32) name length(32) value` (several values of one name are NUL-separated).

Flow control (WINDOW_UPDATE) is read and ignored, as the client's SPDY library does; PINGs are echoed.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from localkube.server.errors import ServingError

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
# RST_STREAM status codes.
PROTOCOL_ERROR, REFUSED_STREAM, CANCEL = 1, 3, 5
# The control frames that name a stream (in their first 4 bytes).
_STREAM_FRAMES = frozenset({SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE})


def _dictionary() -> bytes:
    """The header compression dictionary of SPDY/3 (draft 3, section 2.6.10.1): length-prefixed words, then
    a block of common values."""
    words = [
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
    ]
    words += ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    )
    prefixed = b"".join(struct.pack(">I", len(w)) + w.encode() for w in words)
    return prefixed + tail.encode()


DICTIONARY = _dictionary()


class ProtocolError(ServingError):
    """The peer sent something that is not SPDY/3.1."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame: a control frame has a `kind` (SYN_STREAM, PING, ...); a data frame has kind 0."""

    kind: int
    flags: int
    stream: int
    payload: bytes
    headers: dict[str, str] | None = None

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


class FrameReader:
    """Cuts a byte stream into frames; fed bytes as they arrive, in pieces of any size."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> Iterator[Frame]:
        self._buffer += data
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                return
            head, payload = bytes(self._buffer[:8]), bytes(self._buffer[8 : 8 + length])
            del self._buffer[: 8 + length]
            yield self._frame(head, payload)

    def _frame(self, head: bytes, payload: bytes) -> Frame:
        first, flags = struct.unpack(">I", head[:4])[0], head[4]
        if not first & 0x80000000:
            return Frame(0, flags, first & 0x7FFFFFFF, payload)
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise ProtocolError(f"SPDY version {version} is not supported")
        if kind not in _STREAM_FRAMES or len(payload) < 4:
            return Frame(kind, flags, 0, payload)
        stream = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
        if kind == SYN_STREAM:
            return Frame(kind, flags, stream, payload, self._headers(payload[10:]))
        if kind in (SYN_REPLY, HEADERS):
            return Frame(kind, flags, stream, payload, self._headers(payload[4:]))
        return Frame(kind, flags, stream, payload)

    def _headers(self, block: bytes) -> dict[str, str]:
        """A header block; the zlib stream is the session's, so every block must be inflated in order."""
        try:
            raw = self._inflate.decompress(block)
        except zlib.error as bad:
            raise ProtocolError(f"a header block that does not inflate: {bad}") from None
        try:
            (count,) = struct.unpack(">I", raw[:4])
            offset, headers = 4, {}
            for _ in range(count):
                (size,) = struct.unpack(">I", raw[offset : offset + 4])
                name = raw[offset + 4 : offset + 4 + size].decode("latin-1")
                offset += 4 + size
                (size,) = struct.unpack(">I", raw[offset : offset + 4])
                headers[name.lower()] = raw[offset + 4 : offset + 4 + size].decode("latin-1")
                offset += 4 + size
        except struct.error as bad:
            raise ProtocolError(f"a malformed header block: {bad}") from None
        return headers


class FrameWriter:
    """Encodes the frames this side sends (its own zlib stream for header blocks)."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)

    @staticmethod
    def _control(kind: int, flags: int, payload: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload

    def _block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for name, value in headers.items():
            raw += (
                struct.pack(">I", len(name)) + name.encode() + struct.pack(">I", len(value)) + value.encode()
            )
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_reply(self, stream: int, headers: dict[str, str], fin: bool = False) -> bytes:
        payload = struct.pack(">I", stream) + self._block(headers)
        return self._control(SYN_REPLY, FLAG_FIN if fin else 0, payload)

    def rst_stream(self, stream: int, status: int) -> bytes:
        return self._control(RST_STREAM, 0, struct.pack(">II", stream, status))

    def ping(self, ping_id: bytes) -> bytes:
        return self._control(PING, 0, ping_id)

    def goaway(self, last_stream: int, status: int = 0) -> bytes:
        """The session is over: no stream after `last_stream` (the peer's last this side took) was seen."""
        return self._control(GOAWAY, 0, struct.pack(">II", last_stream, status))

    @staticmethod
    def data(stream: int, data: bytes, fin: bool = False) -> bytes:
        return struct.pack(">II", stream, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data
