"""kubectl against localkube in process mode: a pod that runs `python -m http.server` becomes Ready through
its HTTP probe, `kubectl logs` shows what it printed and `logs -f` follows it, the service proxy reaches it,
and deleting the pod ends the stream and leaves no process behind."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable

import yaml

from conformance.support import run_kubectl
from localkube_process import LocalKubeProcess


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _running(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


def test_a_web_pod_is_ready_logged_proxied_and_leaves_nothing(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> None:
    server = localkube_factory(extra_args=["--node-mode", "process"])
    port = _free_port()
    command = ["python", "-u", "-m", "http.server", str(port)]
    container = {
        "name": "web",
        "image": "python:3.11",
        "command": command,
        "ports": [{"name": "http", "containerPort": port}],
        "readinessProbe": {"httpGet": {"path": "/", "port": port}, "periodSeconds": 1},
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"containers": [container]}}  # fmt: skip
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    run_kubectl(server, "apply", "-f", "-", input=yaml.safe_dump_all([pod, service]))
    run_kubectl(server, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
    listing = run_kubectl(
        server, "get", "--raw", "/api/v1/namespaces/default/services/web:http/proxy/"
    ).stdout
    assert "Directory listing" in listing
    logs = run_kubectl(server, "logs", "web").stdout
    assert '"GET / HTTP/1.1" 200' in logs
    follow = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(server.kubeconfig), "logs", "-f", "web"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follow.stdout is not None
    for line in follow.stdout:  # the history first; the stream then stays open
        if '"GET / HTTP/1.1" 200' in line:
            break
    run_kubectl(
        server, "get", "--raw", "/api/v1/namespaces/default/services/web:http/proxy/missing", check=False
    )
    pattern = f"http.server {port}"
    assert _running(pattern)
    run_kubectl(server, "delete", "pod", "web", "--timeout=60s")
    followed, _ = follow.communicate(timeout=30)  # the stream ends when the pod is gone
    assert '"GET /missing HTTP/1.1" 404' in followed
    assert not _running(pattern)
