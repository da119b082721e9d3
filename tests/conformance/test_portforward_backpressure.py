"""A port-forward whose client sends faster than its pod reads, against localkube in process mode (as root):
localkube holds a bounded part of what was sent and makes the client wait for the pod, rather than taking
everything into its memory; and every byte still reaches the pod, in order.

The pod takes a connection on its data port and reads nothing from it until a connection comes on its
control port; then it reads slowly, and answers with how much it read and its SHA-256. The client sends
many times localkube's bound: while the pod reads nothing, only the bound and the socket buffers on the
way can be taken from it. Both forms of port-forward: kubectl's SPDY tunnel, and the channel protocol of
the official clients (`v4.channel.k8s.io`). The control connection goes through a forward of its own, as
the connections of one forward share its WebSocket, which waits on the pod too.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
import yaml
from websockets.asyncio.client import connect as ws_connect
from websockets.typing import Subprotocol

from conformance.support import run_kubectl
from kuberay.local.ports import free_port
from support.eventually import eventually, holds
from support.localkube_process import LocalKubeProcess

POD = "slow-reader"
TOTAL = 128 * 1024 * 1024  # 128 x localkube's bound of 1 MiB per connection
CHUNK = 64 * 1024
# What may leave the client while the pod reads nothing: localkube's 1 MiB and a message over it, and what
# the socket buffers between client, kubectl, localkube and the pod take (10-15 MiB seen here; the kernel
# grows a receive buffer up to 32 MiB). Without the bound, localkube took all 64 MiB of a first version of
# this test within a second through kubectl, 28 MiB a second through the channels.
IN_FLIGHT_LIMIT = 64 * 1024 * 1024
HOLD_SECONDS = 6.0

# The pod: its health port for the readiness probe; a data connection is read only once a control
# connection has come, then slowly (a pause every read), and answered with "<bytes read> <sha256>\n".
SLOW_READER = """
import hashlib, socket, sys, threading, time
data_port, control_port, health_port, total = map(int, sys.argv[1:5])
health = socket.create_server(("0.0.0.0", health_port))
threading.Thread(target=lambda: [health.accept()[0].close() for _ in iter(int, 1)], daemon=True).start()
data, control = socket.create_server(("0.0.0.0", data_port)), socket.create_server(("0.0.0.0", control_port))
while True:
    connection, _ = data.accept()
    control.accept()[0].close()
    digest, received = hashlib.sha256(), 0
    while received < total:
        chunk = connection.recv(64 * 1024)
        if not chunk:
            break
        digest.update(chunk)
        received += len(chunk)
        time.sleep(0.001)
    connection.sendall(f"{received} {digest.hexdigest()}\\n".encode())
    connection.close()
"""


@dataclass(frozen=True)
class SlowReader:
    server: LocalKubeProcess
    data_port: int
    control_port: int


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlowReader]:
    """A process-mode localkube with the pod `slow-reader` Ready."""
    process = LocalKubeProcess(
        tmp_path_factory.mktemp("localkube-backpressure"), extra_args=["--node-mode", "process"]
    ).start()
    try:
        data_port, control_port, health_port = free_port(), free_port(), free_port()
        ports = [str(data_port), str(control_port), str(health_port), str(TOTAL)]
        container = {"name": "reader", "image": "python:3.11", "command": ["python", "-c", SLOW_READER, *ports],
                     "readinessProbe": {"tcpSocket": {"port": health_port}, "periodSeconds": 1}}  # fmt: skip
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD}, "spec": {"containers": [container]}}  # fmt: skip
        run_kubectl(process, "apply", "-f", "-", input=yaml.safe_dump(pod))
        run_kubectl(process, "wait", "--for=condition=Ready", f"pod/{POD}", "--timeout=60s")
        yield SlowReader(process, data_port, control_port)
    finally:
        process.stop(timeout=30)


@contextmanager
def _forward(server: LocalKubeProcess, remote: int) -> Iterator[int]:
    """`kubectl port-forward` of the pod's `remote` port; yields the local port."""
    local = free_port()
    forwarder = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(server.kubeconfig), "port-forward", f"pod/{POD}", f"{local}:{remote}"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert forwarder.stdout is not None
        assert "Forwarding from 127.0.0.1" in forwarder.stdout.readline()
        yield local
    finally:
        forwarder.send_signal(signal.SIGINT)
        forwarder.communicate(timeout=30)


@dataclass
class _Upload:
    """The client's side, run on a thread of its own: what it has sent so far, and the pod's answer."""

    payload: bytes
    sent: int = 0
    connected: threading.Event = field(default_factory=threading.Event)
    answer: bytes = b""
    failure: BaseException | None = None

    def chunks(self) -> Iterator[memoryview]:
        view = memoryview(self.payload)
        for start in range(0, len(view), CHUNK):
            yield view[start : start + CHUNK]

    def through_kubectl(self, local: int) -> None:
        with socket.create_connection(("127.0.0.1", local), timeout=120) as connection:
            self.connected.set()
            for chunk in self.chunks():
                connection.sendall(chunk)
                self.sent += len(chunk)
            while not self.answer.endswith(b"\n") and (received := connection.recv(4096)):
                self.answer += received

    async def through_channels(self, server: LocalKubeProcess, port: int) -> None:
        url = server.url.replace("https://", "wss://")
        url += f"/api/v1/namespaces/default/pods/{POD}/portforward?ports={port}"
        async with ws_connect(
            url,
            ssl=server.ssl_context(),
            additional_headers={"Authorization": f"Bearer {server.token}"},
            subprotocols=[Subprotocol("v4.channel.k8s.io")],
            open_timeout=30,
        ) as ws:
            for _ in range(2):  # each channel first carries the port
                await asyncio.wait_for(ws.recv(), 30)
            self.connected.set()
            for chunk in self.chunks():
                await ws.send(b"\x00" + bytes(chunk))  # waits while the connection's write buffer is full
                self.sent += len(chunk)
            while not self.answer.endswith(b"\n"):
                message = await asyncio.wait_for(ws.recv(), 120)
                assert isinstance(message, bytes)
                assert message[0] == 0, f"the error channel: {message[1:]!r}"
                self.answer += message[1:]

    def run(self, reader: SlowReader, protocol: str, local: int) -> None:
        try:
            if protocol == "kubectl":
                self.through_kubectl(local)
            else:
                asyncio.run(self.through_channels(reader.server, reader.data_port))
        except BaseException as failed:
            self.failure = failed


@pytest.mark.parametrize("protocol", ["kubectl", "channels"])
def test_a_client_faster_than_its_pod_waits_for_it_and_every_byte_arrives_in_order(
    reader: SlowReader, protocol: str
) -> None:
    upload = _Upload(random.Random(52).randbytes(TOTAL))
    server = reader.server
    with _forward(server, reader.data_port) as local, _forward(server, reader.control_port) as control:
        client = threading.Thread(target=upload.run, args=(reader, protocol, local), daemon=True)
        client.start()
        eventually(lambda: upload.connected.is_set() or upload.failure, 60, "the data connection")
        assert upload.failure is None
        holds(
            lambda: upload.sent <= IN_FLIGHT_LIMIT,
            HOLD_SECONDS,
            lambda: f"a pod that reads nothing was sent {upload.sent} bytes (localkube took them all)",
        )
        socket.create_connection(("127.0.0.1", control), timeout=30).close()  # the pod begins to read
        client.join(timeout=240)
        assert not client.is_alive(), f"the upload stalled at {upload.sent} of {TOTAL} bytes"
    assert upload.failure is None
    assert upload.answer.decode().split() == [str(TOTAL), hashlib.sha256(upload.payload).hexdigest()]
