"""SPDY/3.1 framing for kubectl's port-forward tunnel: frames cut from a byte stream in any pieces, header
blocks through the session's zlib streams, and the frames the server sends."""

from __future__ import annotations

import struct
import zlib

import pytest

from localkube.server import spdy


def _client_syn_stream(deflate: zlib._Compress, stream: int, headers: dict[str, str]) -> bytes:
    """A SYN_STREAM as a client encodes it: ids, priority, then a header block through its zlib stream."""
    block = struct.pack(">I", len(headers))
    for name, value in headers.items():
        block += struct.pack(">I", len(name)) + name.encode() + struct.pack(">I", len(value)) + value.encode()
    compressed = deflate.compress(block) + deflate.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIH", stream, 0, 0) + compressed
    return struct.pack(">HHI", 0x8003, spdy.SYN_STREAM, len(payload)) + payload


def test_the_dictionary_is_the_protocols() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"utf-,*,enq=0.")


@pytest.mark.parametrize("piece", [1, 7, 1000])
def test_frames_are_cut_from_a_stream_in_any_pieces(piece: int) -> None:
    deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
    wire = (
        _client_syn_stream(deflate, 1, {"streamtype": "error", "port": "8080", "requestid": "0"})
        + _client_syn_stream(deflate, 3, {"streamtype": "data", "port": "8080", "requestid": "0"})
        + struct.pack(">II", 3, (spdy.FLAG_FIN << 24) | 5)
        + b"hello"
        + struct.pack(">HHI", 0x8003, spdy.PING, 4)
        + b"\x00\x00\x00\x01"
    )
    reader = spdy.FrameReader()
    frames = [
        frame for start in range(0, len(wire), piece) for frame in reader.feed(wire[start : start + piece])
    ]
    assert [(f.kind, f.stream) for f in frames] == [
        (spdy.SYN_STREAM, 1),
        (spdy.SYN_STREAM, 3),
        (0, 3),
        (spdy.PING, 0),
    ]
    assert frames[1].headers == {"streamtype": "data", "port": "8080", "requestid": "0"}
    assert frames[2].payload == b"hello" and frames[2].fin


def test_a_reply_header_block_inflates_with_the_dictionary() -> None:
    writer = spdy.FrameWriter()
    inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)
    for stream in (1, 3):  # the second block depends on the first: one zlib stream per session
        frame = writer.syn_reply(stream, {"x": "y"})
        first, flags_length = struct.unpack(">II", frame[:8])
        assert first == 0x80030000 | spdy.SYN_REPLY
        assert flags_length & 0xFFFFFF == len(frame) - 8
        assert struct.unpack(">I", frame[8:12])[0] == stream
        assert inflate.decompress(frame[12:]) == b"\x00\x00\x00\x01\x00\x00\x00\x01x\x00\x00\x00\x01y"


def test_another_version_is_a_protocol_error() -> None:
    with pytest.raises(spdy.ProtocolError, match="version 2"):
        list(spdy.FrameReader().feed(struct.pack(">HHI", 0x8002, spdy.PING, 4) + b"\x00\x00\x00\x01"))


def test_a_header_block_that_does_not_inflate_is_a_protocol_error() -> None:
    """Not a zlib error escaping the tunnel's loop: the tunnel ends with the reason in localkube's log."""
    payload = struct.pack(">IIH", 1, 0, 0) + b"not zlib at all"
    frame = struct.pack(">HHI", 0x8003, spdy.SYN_STREAM, len(payload)) + payload
    with pytest.raises(spdy.ProtocolError, match="does not inflate"):
        list(spdy.FrameReader().feed(frame))
