"""A WebSocket through `kubectl port-forward` to a process-mode pod of `kuberay local up`, held for five
minutes on a busy machine with a message every second, never closes and loses nothing (issue 41).

The pod serves a WebSocket echo (the `websockets` library, as Ray's dashboard serves its log tail with
aiohttp); the user's side is the real kubectl's port-forward, which tunnels SPDY through a WebSocket to
localkube. The machine is busy with the suite's other files (this one runs beside them, `timers`: it
mostly waits), or, run alone, with busy loops of the test's own. The traffic has bursts (a 1 MiB message
each way, then 64 KiB messages from the pod), and kubectl is paused for 45 s, longer than the 40 s
without an answered ping after which localkube used to drop the tunnel (a process descheduled that long
is a fault a busy machine cannot make on demand, so SIGSTOP makes it); the messages sent meanwhile must
all come back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import yaml
from websockets.sync.client import ClientConnection, connect

from kuberay.local.ports import free_port
from support.local_instance import LocalInstance

pytestmark = [pytest.mark.slow, pytest.mark.timers, pytest.mark.timeout(900)]

HELD_SECONDS = 300
BURST_EVERY = 30  # messages
PAUSE_AT, PAUSE_SECONDS = 120, 45.0
# A bound for one answer on a loaded machine, not a measurement.
ANSWER_TIMEOUT = 120.0

# The pod's program: echoes each message; "burst N SIZE" answers with N messages of SIZE bytes, then "done".
ECHO_SERVER = """
import asyncio, sys
import websockets

async def echo(socket):
    async for message in socket:
        if isinstance(message, str) and message.startswith("burst "):
            _, count, size = message.split()
            for index in range(int(count)):
                await socket.send(bytes([index % 256]) * int(size))
            await socket.send("done")
        else:
            await socket.send(message)

async def main():
    async with websockets.serve(echo, "0.0.0.0", int(sys.argv[1]), max_size=None, ping_interval=None):
        await asyncio.Future()

asyncio.run(main())
"""


def echo_pod(port: int) -> dict[str, object]:
    container = {
        "name": "echo",
        "image": "python:3.11",
        "command": [sys.executable, "-u", "-c", ECHO_SERVER, str(port)],
        "ports": [{"containerPort": port}],
        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "echo"},
        "spec": {"containers": [container]},
    }


@pytest.fixture
def busy_machine() -> Iterator[None]:
    """Every core busy while the test runs: as many busy loops at the default priority as the load average
    leaves cores idle (none in the suite, where this file runs beside busy ones; all of them alone)."""
    idle = max(0, (os.cpu_count() or 1) - round(os.getloadavg()[0]))
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(idle)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@pytest.fixture
def port_forward(local_process: LocalInstance) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`kubectl port-forward pod/echo LOCAL:PORT` in a namespace of its own, once it listens."""
    namespace = local_process.namespace("port-forward-held")
    port, local = free_port(), free_port()
    local_process.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(echo_pod(port)))
    local_process.kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/echo", "--timeout=120s")
    forward = subprocess.Popen(
        ["kubectl", "--kubeconfig", local_process.kubeconfig, "port-forward", "-n", namespace, "pod/echo",
         f"{local}:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        first = forward.stdout.readline()
        assert first.startswith("Forwarding from"), first
        yield forward, local
    finally:
        forward.send_signal(signal.SIGCONT)
        forward.terminate()
        forward.communicate(timeout=30)


def echo(socket: ClientConnection, message: str) -> None:
    socket.send(message)
    assert socket.recv(timeout=ANSWER_TIMEOUT) == message


def burst(socket: ClientConnection) -> None:
    big = bytes(range(256)) * 4096
    socket.send(big)
    assert socket.recv(timeout=ANSWER_TIMEOUT) == big
    socket.send("burst 64 65536")
    for index in range(64):
        assert socket.recv(timeout=ANSWER_TIMEOUT) == bytes([index % 256]) * 65536
    assert socket.recv(timeout=ANSWER_TIMEOUT) == "done"


def test_a_websocket_through_port_forward_is_held_for_minutes_under_load(
    port_forward: tuple[subprocess.Popen[str], int], busy_machine: None
) -> None:
    forward, local = port_forward
    with connect(f"ws://127.0.0.1:{local}/", max_size=None, ping_interval=None, open_timeout=60) as socket:
        for second in range(1, HELD_SECONDS + 1):
            if second == PAUSE_AT:
                forward.send_signal(signal.SIGSTOP)
                sent = [f"message {second + n} during the pause" for n in range(int(PAUSE_SECONDS))]
                for message in sent:
                    socket.send(message)
                    time.sleep(1)
                forward.send_signal(signal.SIGCONT)
                assert [socket.recv(timeout=ANSWER_TIMEOUT) for _ in sent] == sent
            echo(socket, f"message {second}")
            if second % BURST_EVERY == 0:
                burst(socket)
            time.sleep(1)
    assert forward.poll() is None, forward.communicate()[0]
