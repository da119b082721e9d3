"""kubectl exec, cp and port-forward, and the official client's exec and port-forward, against localkube in
process mode: a pod that serves HTTP (`python -m http.server`) in its own network namespace (as root).

Each check also asserts that nothing is left once a session ends: no process of the command, no
connection to the pod, no listening port of kubectl's.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import kubernetes
import pytest
import websocket
import yaml
from kubernetes.stream import portforward, stream
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from conformance.support import children, process_mode_localkube, run_kubectl, start_web_pod
from kuberay.local.ports import free_port
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

POD = "web"
# The official client's `stream(...)` never closes its TLS socket once the server has ended the session
# (websocket-client's close() skips a connection it already marks closed); the garbage collector reports it
# whenever it runs. The session that opens them shuts those sockets itself, so that no report lands in
# whatever test runs next on the worker (it failed test_kubectl.py that way); this filter is for the rest.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <ssl.SSLSocket:pytest.PytestUnraisableExceptionWarning"
)
SETTLE_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    """A process-mode localkube for this module."""
    yield from process_mode_localkube(tmp_path_factory.mktemp("localkube-exec"))


@pytest.fixture(scope="module")
def web_port(server: LocalKubeProcess) -> int:
    """The pod `web`, serving HTTP on this port."""
    return start_web_pod(server)


def _kubectl(server: LocalKubeProcess, *args: str) -> list[str]:
    return ["kubectl", "--kubeconfig", str(server.kubeconfig), *args]


def _container_pid(server: LocalKubeProcess) -> int:
    pod = yaml.safe_load(run_kubectl(server, "get", "pod", POD, "-o", "yaml").stdout)
    container_id: str = pod["status"]["containerStatuses"][0]["containerID"]
    return int(container_id.removeprefix("process://"))


def _pod_connections(server: LocalKubeProcess, port: int) -> int:
    """Established TCP connections to the pod's server port, as seen inside the pod's network namespace."""
    listing = subprocess.run(
        ["nsenter", f"--target={_container_pid(server)}", "--net", "ss", "-Htn", "state", "established",
         f"( sport = :{port} )"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return len(listing.splitlines())


def _no_exec_left(server: LocalKubeProcess, before: set[int]) -> bool:
    assert server.process is not None
    return children(server.process.pid) <= before


def test_exec_keeps_stdout_and_stderr_apart_and_exits_with_the_code(
    server: LocalKubeProcess, web_port: int
) -> None:
    assert server.process is not None
    before = children(server.process.pid)
    done = run_kubectl(server, "exec", POD, "--", "sh", "-c", "echo out; echo err >&2; exit 3", check=False)
    assert done.returncode == 3
    assert done.stdout == "out\n"
    assert done.stderr.startswith("err\n")
    assert "out" not in done.stderr
    eventually(lambda: _no_exec_left(server, before), SETTLE_TIMEOUT, "a process of the exec is left")


def test_exec_runs_in_the_pod_with_the_container_environment(server: LocalKubeProcess, web_port: int) -> None:
    pod = yaml.safe_load(run_kubectl(server, "get", "pod", POD, "-o", "yaml").stdout)
    script = "hostname; echo $HOSTNAME; ip -o -4 addr show eth0 || echo no-eth0"
    seen = run_kubectl(server, "exec", POD, "--", "sh", "-c", script).stdout.splitlines()
    assert seen[0] == POD and seen[1] == POD
    if os.geteuid() == 0:  # the pod has its own network namespace: its address is on its eth0
        assert pod["status"]["podIP"] in seen[2]


def test_exec_with_stdin(server: LocalKubeProcess, web_port: int) -> None:
    done = run_kubectl(server, "exec", "-i", POD, "--", "sh", "-c", "tr a-z A-Z; echo end", input="hello\n")
    assert done.stdout == "HELLO\nend\n"


def test_cp_both_ways(server: LocalKubeProcess, web_port: int, tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_text("first file\n")
    (source / "sub" / "b.bin").write_bytes(bytes(range(256)) * 64)
    in_pod = tmp_path / "in-pod"
    in_pod.mkdir()
    run_kubectl(server, "cp", str(source), f"{POD}:{in_pod / 'copy'}")
    listed = run_kubectl(
        server, "exec", POD, "--", "sh", "-c", f"cd {in_pod / 'copy'} && find . -type f | sort"
    )
    assert listed.stdout.split() == ["./a.txt", "./sub/b.bin"]
    back = tmp_path / "back"
    run_kubectl(server, "cp", f"{POD}:{in_pod / 'copy'}", str(back))
    assert (back / "a.txt").read_text() == "first file\n"
    assert (back / "sub" / "b.bin").read_bytes() == bytes(range(256)) * 64


def test_an_exec_the_client_abandons_is_killed(server: LocalKubeProcess, web_port: int) -> None:
    assert server.process is not None
    before = children(server.process.pid)
    marker = "424242"
    client = subprocess.Popen(_kubectl(server, "exec", POD, "--", "sleep", marker))
    eventually(
        lambda: subprocess.run(["pgrep", "-f", f"^sleep {marker}$"]).returncode == 0,
        SETTLE_TIMEOUT,
        "the exec never ran",
    )
    client.send_signal(signal.SIGINT)
    client.wait(timeout=30)
    eventually(
        lambda: subprocess.run(["pgrep", "-f", f"^sleep {marker}$"]).returncode != 0,
        SETTLE_TIMEOUT,
        "the command outlived the client",
    )
    eventually(lambda: _no_exec_left(server, before), SETTLE_TIMEOUT, "a process of the exec is left")


@pytest.mark.parametrize("resource", [f"pod/{POD}", "svc/web"])
def test_port_forward_carries_requests_side_by_side_and_leaves_nothing(
    server: LocalKubeProcess, web_port: int, resource: str
) -> None:
    remote = str(web_port) if resource.startswith("pod/") else "80"
    local = free_port()
    forwarder = subprocess.Popen(
        _kubectl(server, "port-forward", resource, f"{local}:{remote}"), stdout=subprocess.PIPE, text=True
    )
    try:
        assert forwarder.stdout is not None
        assert "Forwarding from 127.0.0.1" in forwarder.stdout.readline()

        def fetch(path: str) -> httpx.Response:
            return httpx.get(f"http://127.0.0.1:{local}{path}", timeout=30)

        with ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(fetch, ["/", "/missing"]))
        assert replies[0].status_code == 200 and "Directory listing" in replies[0].text
        assert replies[1].status_code == 404
        with httpx.Client(timeout=30) as kept_alive:  # one connection, two requests
            assert kept_alive.get(f"http://127.0.0.1:{local}/").status_code == 200
            assert kept_alive.get(f"http://127.0.0.1:{local}/").status_code == 200
    finally:
        forwarder.send_signal(signal.SIGINT)
        forwarder.communicate(timeout=30)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{local}/", timeout=5)
    eventually(
        lambda: _pod_connections(server, web_port) == 0,
        SETTLE_TIMEOUT,
        "a connection to the pod outlived the forward",
    )


def test_port_forward_to_a_closed_port_reports_the_error(server: LocalKubeProcess, web_port: int) -> None:
    local, closed = free_port(), free_port()
    forwarder = subprocess.Popen(
        _kubectl(server, "port-forward", f"pod/{POD}", f"{local}:{closed}"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert forwarder.stdout is not None
        forwarder.stdout.readline()
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{local}/", timeout=10)
    finally:
        forwarder.send_signal(signal.SIGINT)
        _, errors = forwarder.communicate(timeout=30)
    assert f"error forwarding port {closed} to pod {POD}" in errors


# Answers one read with "bye", then resets the connection (SO_LINGER 0).
RESETTER = """
import socket, struct, sys
listener = socket.create_server(("0.0.0.0", int(sys.argv[1])))
while True:
    connection, _ = listener.accept()
    connection.recv(100)
    connection.sendall(b"bye")
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()
"""


def test_a_connection_the_pod_resets_ends_with_the_reason(server: LocalKubeProcess, web_port: int) -> None:
    """As the kubelet does: the pod's reset ends the client's connection and is reported on the error stream,
    which kubectl prints (and then drops the whole forward, as it does against a real kubelet); before, the
    client's connection stayed open with nothing behind it."""
    port, local = free_port(), free_port()
    container = {"name": "resetter", "image": "python:3.11", "command": ["python", "-c", RESETTER, str(port)],
                 "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1}}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "resetter"}, "spec": {"containers": [container]}}  # fmt: skip
    run_kubectl(server, "apply", "-f", "-", input=yaml.safe_dump(pod))
    try:
        run_kubectl(server, "wait", "--for=condition=Ready", "pod/resetter", "--timeout=60s")
        forwarder = subprocess.Popen(
            _kubectl(server, "port-forward", "pod/resetter", f"{local}:{port}"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert forwarder.stdout is not None
            forwarder.stdout.readline()
            with socket.create_connection(("127.0.0.1", local), timeout=SETTLE_TIMEOUT) as connection:
                connection.sendall(b"hello")
                received = b""
                with contextlib.suppress(ConnectionResetError):
                    while chunk := connection.recv(100):  # a timeout here: the connection was left open
                        received += chunk
            assert received == b"bye"
        finally:
            forwarder.send_signal(signal.SIGINT)
            _, errors = forwarder.communicate(timeout=30)
        assert f"error forwarding port {port} to pod resetter" in errors
    finally:
        run_kubectl(server, "delete", "pod", "resetter", "--wait=false")


def _official_client_session(server: LocalKubeProcess, web_port: int) -> None:
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(server.kubeconfig), client_configuration=configuration)
    with kubernetes.client.ApiClient(configuration) as client:
        core = kubernetes.client.CoreV1Api(client)
        output = stream(
            core.connect_get_namespaced_pod_exec, POD, "default",
            command=["sh", "-c", "echo hi; echo there >&2"], stderr=True, stdin=False, stdout=True, tty=False,
        )  # fmt: skip
        assert output == "hi\nthere\n"
        session = stream(
            core.connect_get_namespaced_pod_exec, POD, "default", command=["sh", "-c", "read x; echo got $x; exit 4"],
            stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False,
        )  # fmt: skip
        session.write_stdin("abc\n")
        session.run_forever(timeout=30)
        session.close()
        assert session.read_stdout() == "got abc\n"
        assert session.returncode == 4
        terminal = stream(
            core.connect_get_namespaced_pod_exec, POD, "default", command=["sh", "-c", "sleep 1; stty size"],
            stderr=False, stdin=True, stdout=True, tty=True, _preload_content=False,
        )  # fmt: skip
        terminal.write_channel(4, '{"Width": 100, "Height": 40}')
        terminal.run_forever(timeout=30)
        terminal.close()
        assert terminal.read_stdout().split() == ["40", "100"]

        forward = portforward(
            core.connect_get_namespaced_pod_portforward, POD, "default", ports=str(web_port)
        )
        connection = forward.socket(web_port)
        connection.setblocking(True)
        connection.sendall(b"GET / HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
        connection.close()
        forward.close()
        assert reply.startswith(b"HTTP/1.0 200 OK") and b"Directory listing" in reply
    for leftover in gc.get_objects():
        if isinstance(leftover, websocket.WebSocket):
            leftover.shutdown()


def test_the_official_client_execs_and_port_forwards(server: LocalKubeProcess, web_port: int) -> None:
    _official_client_session(server, web_port)
    eventually(
        lambda: _pod_connections(server, web_port) == 0,
        SETTLE_TIMEOUT,
        "a connection to the pod outlived the forward",
    )


def test_exec_needs_create_on_pods_exec(server: LocalKubeProcess, web_port: int) -> None:
    """A WebSocket exec is a GET: the API server wants `get` and `create` on pods/exec."""
    kubectl = lambda *args, **kwargs: run_kubectl(server, *args, **kwargs)  # noqa: E731
    kubectl("create", "serviceaccount", "execer")
    kubectl("create", "role", "execer", "--verb=get", "--resource=pods,pods/exec")
    kubectl("create", "rolebinding", "execer", "--role=execer", "--serviceaccount=default:execer")
    token = kubectl("create", "token", "execer").stdout.strip()
    refused = kubectl("--token", token, "exec", POD, "--", "true", check=False)
    assert refused.returncode != 0
    assert re.search(r'cannot create resource "pods/exec"', refused.stderr), refused.stderr
    kubectl("create", "role", "execer-create", "--verb=create", "--resource=pods/exec")
    kubectl(
        "create", "rolebinding", "execer-create", "--role=execer-create", "--serviceaccount=default:execer"
    )
    assert kubectl("--token", token, "exec", POD, "--", "echo", "allowed").stdout == "allowed\n"


def test_exec_on_a_simulated_node_is_refused_with_the_reason(
    kubectl: Callable[..., subprocess.CompletedProcess[str]], namespace: str
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/p", "--timeout=60s")
    refused = kubectl("exec", "-n", namespace, "p", "--", "true", check=False)
    assert refused.returncode != 0
    assert "--node-mode process" in refused.stderr


def test_attach_follows_the_container_output_stream_by_stream(
    server: LocalKubeProcess, web_port: int
) -> None:
    attached = subprocess.Popen(
        _kubectl(server, "attach", POD), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(2)  # attach shows only what the container writes once it is attached
        url = f"http://localhost:{web_port}/attach-marker"
        fetch = f"import urllib.request, urllib.error\ntry: urllib.request.urlopen({url!r})\nexcept urllib.error.HTTPError: pass"
        run_kubectl(server, "exec", POD, "--", "python", "-c", fetch)
        time.sleep(2)  # the log is followed every 0.2 s
    finally:
        attached.send_signal(signal.SIGINT)
        out, err = attached.communicate(timeout=30)
    assert '"GET /attach-marker HTTP/1.1" 404' in err  # http.server logs requests on stderr
    assert "attach-marker" not in out
    refused = run_kubectl(server, "attach", "-i", POD, check=False)
    assert refused.returncode != 0 and "stdin closed" in refused.stderr


@pytest.mark.parametrize("protocol", ["v4.channel.k8s.io", "v3.channel.k8s.io", "channel.k8s.io"])
def test_older_channel_protocols_report_the_exit(
    server: LocalKubeProcess, web_port: int, protocol: str
) -> None:
    """Clients that fall back to an older protocol: v4 reports the exit code in a Status on the error
    channel, older ones only the failure's text."""
    query = "command=sh&command=-c&command=echo%20hi%3B%20exit%205&stdout=true&stderr=true"
    url = server.url.replace("https://", "wss://") + f"/api/v1/namespaces/default/pods/{POD}/exec?{query}"
    headers = {"Authorization": f"Bearer {server.token}"}

    async def session() -> tuple[str | None, list[bytes]]:
        # The asyncio client, not websockets' sync one: the sync client reads its TLS socket on a thread of
        # its own while it writes the handshake on the caller's, and OpenSSL's objects are not safe for
        # that (seen in CI: "[SSL] internal error" on the handshake's send). Its open_timeout is raised
        # from 10 s for a loaded 2-core machine.
        received: list[bytes] = []
        async with ws_connect(
            url,
            ssl=server.ssl_context(),
            additional_headers=headers,
            subprotocols=[Subprotocol(protocol)],
            open_timeout=SETTLE_TIMEOUT,
        ) as ws:
            with contextlib.suppress(ConnectionClosed):
                while True:
                    message = await asyncio.wait_for(ws.recv(), timeout=30)
                    received.append(message if isinstance(message, bytes) else message.encode())
        return ws.subprotocol, received

    subprotocol, messages = asyncio.run(session())
    assert subprotocol == protocol
    assert b"".join(m[1:] for m in messages if m[0] == 1) == b"hi\n"
    (error,) = [m[1:] for m in messages if m[0] == 3]
    if protocol == "v4.channel.k8s.io":
        status = json.loads(error)
        assert status["reason"] == "NonZeroExitCode"
        assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "5"}]
    else:
        assert b"exit code 5" in error


def test_exec_with_a_terminal_sized_as_kubectls(server: LocalKubeProcess, web_port: int) -> None:
    """`kubectl exec -it` on a terminal of 33 rows and 111 columns: the shell's terminal has that size, and
    the exit code comes back."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child: kubectl on the pseudo-terminal (never back into pytest)
        try:
            os.execvp("kubectl", _kubectl(server, "exec", "-it", POD, "--", "sh"))
        finally:
            os._exit(127)
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 111, 0, 0))
    seen = bytearray()

    def read_until(marker: bytes) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while marker not in seen:
            assert time.monotonic() < deadline, f"no {marker!r} in {bytes(seen)!r}"
            if select.select([terminal], [], [], 0.2)[0]:
                with contextlib.suppress(OSError):  # EIO once kubectl has exited
                    seen.extend(os.read(terminal, 4096))

    try:
        read_until(b"# ")
        os.write(terminal, b"echo size=$(stty size)\n")
        read_until(b"size=33 111")
        os.write(terminal, b"exit 7\n")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(terminal)
    assert os.waitstatus_to_exitcode(status) == 7


def test_exec_reaches_a_running_init_container_and_refuses_one_not_started(
    server: LocalKubeProcess, web_port: int
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "initializing"}, "spec": {
        "initContainers": [{"name": "init", "image": "busybox", "command": ["sleep", "3600"]}],
        "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}}  # fmt: skip
    run_kubectl(server, "apply", "-f", "-", input=yaml.safe_dump(pod))
    path = "jsonpath={.status.initContainerStatuses[0].state.running.startedAt}"
    eventually(
        lambda: bool(run_kubectl(server, "get", "pod", "initializing", "-o", path).stdout),
        SETTLE_TIMEOUT,
        "init never ran",
    )
    assert run_kubectl(server, "exec", "initializing", "-c", "init", "--", "echo", "hi").stdout == "hi\n"
    refused = run_kubectl(server, "exec", "initializing", "-c", "main", "--", "true", check=False)
    assert refused.returncode != 0
    assert 'container not found ("main")' in refused.stderr
    run_kubectl(server, "delete", "pod", "initializing", "--grace-period=1")
