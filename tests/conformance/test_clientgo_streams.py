"""client-go's own exec and port-forward against localkube in process mode, over SPDY/3.1 and over WebSockets.

`streamclient` (scripts/tools/streamclient/build: client-go at the release of the real control plane) runs
remotecommand.NewSPDYExecutor and spdy.NewDialer (an `Upgrade: SPDY/3.1` request, then the kubelet's streams),
and remotecommand.NewWebSocketExecutor and portforward.NewSPDYOverWebsocketDialer (what kubectl uses). Then
what a broken SPDY client does to the server: refusals before the upgrade, a malformed frame, a stream that
never comes; each closes its own connection and nothing else.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.support import children, process_mode_localkube, start_web_pod
from localkube.server import spdy
from support import runreport, toolbuild
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

POD = "web"
TRANSPORTS = ("spdy", "websocket")
RUN_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def streamclient() -> Path:
    """The client-go program, built once per machine (its fixture's name is its tool's, so a cold run builds
    it beside the rest of the suite)."""
    path, seconds = toolbuild.ensure("streamclient")
    runreport.report(f"streamclient: {path} ready in {seconds:.1f} s (built on first use)")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    yield from process_mode_localkube(tmp_path_factory.mktemp("localkube-clientgo"))


@pytest.fixture(scope="module")
def web_port(server: LocalKubeProcess) -> int:
    """The pod `web`, serving HTTP on this port."""
    return start_web_pod(server)


def _run(streamclient: Path, server: LocalKubeProcess, transport: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(streamclient), "-kubeconfig", str(server.kubeconfig), "-pod", POD, "-transport", transport,
         "-timeout", "90s", *args],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"streamclient failed ({done.returncode}): {done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_exec_keeps_stdout_and_stderr_apart_and_gives_client_go_the_exit_code(
    streamclient: Path, server: LocalKubeProcess, web_port: int, transport: str
) -> None:
    script = "cat; echo to-stderr >&2; exit 3"
    failed = _run(streamclient, server, transport, "-stdin", "from stdin\n", "exec", "--", "sh", "-c", script)
    assert failed == {
        "stdout": "from stdin\n",  # stdin's end reached the command (cat ended), and its output came back
        "stderr": "to-stderr\n",
        "exitCode": 3,  # client-go's exec.CodeExitError, from the error stream's Status
        "error": "command terminated with exit code 3",
    }
    succeeded = _run(streamclient, server, transport, "exec", "--", "sh", "-c", "echo fine")
    assert succeeded == {"stdout": "fine\n", "stderr": "", "exitCode": 0, "error": ""}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_exec_on_a_terminal_of_the_size_client_go_sends(
    streamclient: Path, server: LocalKubeProcess, web_port: int, transport: str
) -> None:
    """The size comes on the resize stream (SPDY) or channel (WebSocket) after the command has started: the
    command waits for it."""
    script = 'while [ "$(stty size)" = "0 0" ]; do sleep 0.1; done; stty size; exit 4'
    result = _run(streamclient, server, transport, "-tty", "-columns", "111", "-rows", "33",
                  "exec", "--", "sh", "-c", script)  # fmt: skip
    assert result == {"stdout": "33 111\r\n", "stderr": "", "exitCode": 4,
                      "error": "command terminated with exit code 4"}  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_port_forward_of_a_pods_port(
    streamclient: Path, server: LocalKubeProcess, web_port: int, transport: str
) -> None:
    """Two connections, one after the other, through one forwarder (each its own request id)."""
    result = _run(streamclient, server, transport, "-port", str(web_port), "-connections", "2",
                  "-send", "GET / HTTP/1.0\r\n\r\n", "portforward")  # fmt: skip
    assert result["error"] == ""
    assert len(result["responses"]) == 2
    for response in result["responses"]:
        assert response.startswith("HTTP/1.0 200 OK\r\n"), response[:200]
        assert "Directory listing" in response


# -- a broken SPDY client ------------------------------------------------------------------------------------


def _connect(server: LocalKubeProcess) -> ssl.SSLSocket:
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=30)
    return server.ssl_context().wrap_socket(raw, server_hostname=host)


def _upgrade(
    server: LocalKubeProcess, path: str, protocols: list[str], early: bytes = b""
) -> tuple[ssl.SSLSocket, bytes]:
    """Sends a SPDY upgrade request (and `early` in the same write); the connection and the answer's head
    (and body, when it is no 101)."""
    conn, answer, _ = _upgrade_reading_on(server, path, protocols, early)
    return conn, answer


def _upgrade_reading_on(
    server: LocalKubeProcess, path: str, protocols: list[str], early: bytes = b""
) -> tuple[ssl.SSLSocket, bytes, bytes]:
    """`_upgrade`, and what came after a 101's head in the same reads."""
    conn = _connect(server)
    lines = [f"POST {path} HTTP/1.1", f"Host: {server.url.removeprefix('https://')}",
             f"Authorization: Bearer {server.token}", "Connection: Upgrade", "Upgrade: SPDY/3.1",
             "Content-Length: 0", *(f"X-Stream-Protocol-Version: {p}" for p in protocols)]  # fmt: skip
    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + early)
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = conn.recv(65536)
        assert chunk, f"the server closed before answering: {answer!r}"
        answer += chunk
    head, _, rest = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 101"):
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        while len(rest) < length:
            rest += conn.recv(65536)
        return conn, head + b"\r\n\r\n" + rest, b""
    return conn, head, rest


def _syn_stream(stream: int, headers: dict[str, str], deflate: Any) -> bytes:
    block = struct.pack(">I", len(headers))
    for name, value in headers.items():
        block += struct.pack(">I", len(name)) + name.encode() + struct.pack(">I", len(value)) + value.encode()
    compressed = deflate.compress(block) + deflate.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIBB", stream, 0, 0, 0) + compressed
    return struct.pack(">HHI", 0x8000 | 3, spdy.SYN_STREAM, len(payload)) + payload


def _read_until_closed(conn: ssl.SSLSocket) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as closed)."""
    received = b""
    conn.settimeout(60)
    try:
        while chunk := conn.recv(65536):
            received += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    return received


def _exec_path(query: str) -> str:
    return f"/api/v1/namespaces/default/pods/{POD}/exec?{query}"


def test_refusals_come_before_the_upgrade_with_a_status(server: LocalKubeProcess, web_port: int) -> None:
    cases = [
        # (path, protocols, status, in the message)
        (_exec_path("command=true&stdout=true").replace(POD, "missing"), ["v4.channel.k8s.io"], 404, "not found"),
        (_exec_path("command=true&stdout=true"), ["v9.channel.k8s.io"], 403, "unable to negotiate protocol"),
        (_exec_path("command=true&stdout=true"), [], 400, "X-Stream-Protocol-Version does not exist"),
        (_exec_path("command=true"), ["v4.channel.k8s.io"], 400, "at least 1 of stdin, stdout, stderr"),
        (f"/api/v1/namespaces/default/pods/{POD}/portforward", ["v4.channel.k8s.io"], 403, "portforward.k8s.io"),
    ]  # fmt: skip
    for path, protocols, status, message in cases:
        conn, answer = _upgrade(server, path, protocols)
        with conn:
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(f"HTTP/1.1 {status} ".encode()), (path, answer)
            assert message in json.loads(body)["message"], (path, body)
            assert _read_until_closed(conn) == b""  # the connection ends with its answer


def _still_serves(streamclient: Path, server: LocalKubeProcess) -> None:
    result = _run(streamclient, server, "spdy", "exec", "--", "sh", "-c", "echo still")
    assert result["stdout"] == "still\n" and result["exitCode"] == 0


def test_a_malformed_frame_closes_only_its_connection(
    streamclient: Path, server: LocalKubeProcess, web_port: int
) -> None:
    assert server.process is not None
    before = children(server.process.pid)
    for path, protocol in ((_exec_path("command=sleep&command=60&stdout=true"), "v4.channel.k8s.io"),
                           (f"/api/v1/namespaces/default/pods/{POD}/portforward", "portforward.k8s.io")):  # fmt: skip
        for garbage in (
            # a SYN_STREAM whose header block does not inflate
            struct.pack(">HHI", 0x8000 | 3, spdy.SYN_STREAM, 14)
            + struct.pack(">IIBB", 1, 0, 0, 0)
            + b"nozlib",
            # a control frame of SPDY version 2
            struct.pack(">HHI", 0x8000 | 2, spdy.PING, 4) + b"\0\0\0\1",
        ):
            conn, head = _upgrade(server, path, [protocol])
            with conn:
                assert head.startswith(b"HTTP/1.1 101 Switching Protocols"), head
                assert f"X-Stream-Protocol-Version: {protocol}".encode() in head
                conn.sendall(garbage)
                assert _read_until_closed(conn) == b""  # closed, without a frame of its own
    assert children(server.process.pid) <= before  # no command was started
    _still_serves(streamclient, server)


def test_a_stream_never_opened_ends_the_session_before_the_command_runs(
    streamclient: Path, server: LocalKubeProcess, web_port: int
) -> None:
    """stdout and stderr asked for, only the error and stdout streams opened, then the client goes: the
    command never starts, and the server answers the next client."""
    assert server.process is not None
    before = children(server.process.pid)
    conn, head = _upgrade(server, _exec_path("command=sleep&command=60&stdout=true&stderr=true"),
                          ["v4.channel.k8s.io"])  # fmt: skip
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, zdict=spdy.DICTIONARY)
    with conn:
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols"), head
        conn.sendall(_syn_stream(1, {"streamtype": "error"}, deflate))
        conn.sendall(_syn_stream(3, {"streamtype": "stdout"}, deflate))
        reader = spdy.FrameReader()
        replies: list[int] = []
        conn.settimeout(30)
        while len(replies) < 2:
            chunk = conn.recv(65536)
            assert chunk, "closed before replying to both streams"
            replies += [frame.stream for frame in reader.feed(chunk) if frame.kind == spdy.SYN_REPLY]
        assert replies == [1, 3]
        assert children(server.process.pid) <= before  # waiting for stderr: nothing runs yet
    eventually(lambda: children(server.process.pid) <= before, 30, "no command left")  # type: ignore[union-attr]
    _still_serves(streamclient, server)


def test_frames_sent_with_the_request_itself_are_served_after_the_switch(
    server: LocalKubeProcess, web_port: int
) -> None:
    """A client that does not wait for the 101: its streams, in the same write as the request, are read as
    the session's first bytes. The session ends as the kubelet's does: stdout, the error stream's Status
    and a FIN on each stream, then GOAWAY."""
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, zdict=spdy.DICTIONARY)
    early = _syn_stream(1, {"streamtype": "error"}, deflate) + _syn_stream(
        3, {"streamtype": "stdout"}, deflate
    )
    path = _exec_path("command=echo&command=early&stdout=true")
    conn, head, rest = _upgrade_reading_on(server, path, ["v4.channel.k8s.io"], early)
    with conn:
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols"), head
        reader = spdy.FrameReader()
        frames = list(reader.feed(rest))
        conn.settimeout(60)
        while not any(frame.kind == spdy.GOAWAY for frame in frames):
            chunk = conn.recv(65536)
            assert chunk, f"closed before GOAWAY, after {frames}"
            frames += reader.feed(chunk)
    data = {1: b"", 3: b""}
    for frame in frames:
        if frame.kind == 0:
            data[frame.stream] += frame.payload
    assert data == {1: b'{"metadata":{},"status":"Success"}', 3: b"early\n"}
    assert [frame.kind for frame in frames if frame.kind != 0] == [
        spdy.SYN_REPLY,
        spdy.SYN_REPLY,
        spdy.GOAWAY,
    ]
    assert [frame.stream for frame in frames if frame.kind == 0 and frame.fin] == [3, 1]  # stdout, then error
