"""The plugin's background port-forward (`kubectl ray log`, `kubectl ray history`) through the real kubectl to
a process-mode pod of `kuberay local up` carries thousands of connections (issue 52): kubectl writes a line per
connection to its stdout, and the forward used to read only the first, so after enough connections the pipe
was full, kubectl blocked on it, and every later connection hung (after ~6,600 here, with asyncio's buffer).
"""

from __future__ import annotations

import asyncio
import sys

import pytest
import yaml

from kuberay.kubectl import session
from kuberay.kubectl.kube import KubeFlags
from kuberay.local.ports import free_port
from support.local_instance import LocalInstance

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# kubectl's line per connection ("Handling connection for NNNNN\n") is ~30 bytes. Unread, they fill the pipe
# (64 KiB) and the buffer asyncio reads it into before it stops reading (twice its 64 KiB limit): ~6,600.
CONNECTIONS = 8000
# A bound for one request on a loaded machine, not a measurement.
ANSWER_TIMEOUT = 60.0


def _web(port: int) -> list[dict[str, object]]:
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{
            "name": "web", "image": "python:3.11",
            "command": [sys.executable, "-m", "http.server", str(port), "--bind", "0.0.0.0"],
            "ports": [{"containerPort": port}],
            "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1},
        }]},
    }  # fmt: skip
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": port, "targetPort": port}]},
    }  # fmt: skip
    return [pod, service]


async def _get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        await writer.drain()
        return await reader.read()  # HTTP/1.0: the server closes after its answer
    finally:
        writer.close()
        await writer.wait_closed()


async def test_a_background_forward_carries_thousands_of_connections(local_process: LocalInstance) -> None:
    namespace = local_process.namespace("background-forward")
    port = free_port()
    listed = {"apiVersion": "v1", "kind": "List", "items": _web(port)}
    local_process.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(listed))
    local_process.kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/web", "--timeout=120s")
    context = local_process.kubectl("config", "current-context").strip()
    flags = KubeFlags(kubeconfig=local_process.kubeconfig)
    process, address = await session.forward_in_background(
        flags, context, namespace, "web", port, progress=False
    )
    local_port = int(address.rsplit(":", 1)[1])
    try:
        for number in range(CONNECTIONS):
            answer = await asyncio.wait_for(_get(local_port), ANSWER_TIMEOUT)
            assert answer.startswith(b"HTTP/1.0 200"), (number, answer[:200])
        assert process.returncode is None  # the same kubectl carried them all
    finally:
        await session.stop(process)
