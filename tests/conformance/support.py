"""Helpers shared by the conformance tests: running the real kubectl against a localkube, and a web pod."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localkube_process import LocalKubeProcess

TESTDATA = Path(__file__).parent / "testdata"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


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
