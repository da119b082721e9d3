"""Helpers shared by the conformance tests: running the real kubectl against a localkube, a web pod, a
process-mode localkube of a module's own, and protobuf bodies encoded by hand from Kubernetes' field numbers
(independent of the server's table)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from kuberay.local.ports import free_port
from support.localkube_process import LocalKubeProcess

TESTDATA = Path(__file__).parent / "testdata"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]

# The ConfigMap every namespace holds (the root CA publisher's): lists of ConfigMaps leave it out.
ROOT_CA = "kube-root-ca.crt"


def run_kubectl(server: LocalKubeProcess, *args: str, input: str | None = None, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """kubectl with the server's admin kubeconfig; raises with its output when it fails and `check`."""
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(server.kubeconfig), *args],
        input=input, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(
            f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return done


def web_pod_and_service(port: int) -> list[dict[str, Any]]:
    """The pod `web` (labels app=web) running `python -m http.server port`, Ready through its HTTP probe, and
    the Service `web` whose port 80 (named http) targets it."""
    container = {
        "name": "web",
        "image": "python:3.11",
        "command": ["python", "-u", "-m", "http.server", str(port)],
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
    return [pod, service]


def process_mode_localkube(data_dir: Path) -> Iterator[LocalKubeProcess]:
    """A module fixture's body: a localkube with a process-mode node on `data_dir`, stopped afterwards."""
    process = LocalKubeProcess(data_dir, extra_args=["--node-mode", "process"])
    process.start()
    try:
        yield process
    finally:
        process.stop(timeout=30)


def start_web_pod(server: LocalKubeProcess) -> int:
    """Runs `web_pod_and_service` on a free port and waits until the pod is Ready; the port."""
    port = free_port()
    run_kubectl(server, "apply", "-f", "-", input=yaml.safe_dump_all(web_pod_and_service(port)))
    run_kubectl(server, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
    return port


def children(pid: int) -> set[int]:
    """The live child processes of `pid`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
                found.add(int(entry.name))
    return found


# --- Protobuf bodies, as client-go sends them ----------------------------------------------------------------
MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def f(number: int, value: int | bytes | str) -> bytes:
    """One field: varint for ints, length-delimited for bytes and strings."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def entry(number: int, key: str, value: bytes | str) -> bytes:
    return f(number, f(1, key) + f(2, value))


def envelope(api_version: str, kind: str, obj: bytes) -> bytes:
    return MAGIC + f(1, f(1, api_version) + f(2, kind)) + f(2, obj)
