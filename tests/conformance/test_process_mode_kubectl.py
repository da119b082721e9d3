"""kubectl against localkube in process mode: a pod that runs `python -m http.server` becomes Ready through
its HTTP probe, `kubectl logs` shows what it printed and `logs -f` follows it, the service proxy reaches it,
and deleting the pod ends the stream and leaves no process behind; its pods resolve names outside the
cluster as well as its Services."""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Callable

import yaml

from conformance.support import run_kubectl, web_pod_and_service
from kuberay.local.ports import free_port
from support.localkube_process import LocalKubeProcess
from support.outside_name import outside_name


def _running(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


def test_a_web_pod_is_ready_logged_proxied_and_leaves_nothing(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> None:
    server = localkube_factory(extra_args=["--node-mode", "process"])
    port = free_port()
    pod, service = web_pod_and_service(port)
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


def test_a_pod_resolves_outside_names_and_the_clusters_services(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> None:
    """As CoreDNS's `forward . /etc/resolv.conf`: a name outside the cluster is the machine's resolvers'
    answer (on localkube's bridge, through the node's cluster DNS), a Service's name still the cluster's."""
    outside = outside_name()
    server = localkube_factory(extra_args=["--node-mode", "process"])
    port = free_port()
    pod, service = web_pod_and_service(port)
    run_kubectl(server, "apply", "-f", "-", input=yaml.safe_dump_all([pod, service]))
    run_kubectl(server, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
    ip = run_kubectl(server, "get", "pod", "web", "-o", "jsonpath={.status.podIP}").stdout
    code = (
        "import socket, time\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        service = socket.gethostbyname('web.default.svc.cluster.local')\n"
        "        break\n"
        "    except OSError:\n"
        "        time.sleep(0.1)\n"
        f"print(service, socket.gethostbyname({outside!r}))\n"
    )
    resolved = run_kubectl(server, "exec", "web", "--", "python", "-c", code).stdout.split()
    assert resolved[0] == ip
    ipaddress.IPv4Address(resolved[1])  # an address, whichever of the name's the answer held
