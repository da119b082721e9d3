"""What the tests on the containers backend share: kubectl against it, and the waits a user does by eye."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import kubectl
from support.containerkube import ContainerKube
from support.eventually import eventually

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "deploy" / "crds"
OPERATOR_NS = "kuberay-system"
# Ray in containers on a loaded two-core machine: bounds, not measurements.
READY_TIMEOUT = 480.0
POLL = 2.0

# Every test here: the backend makes a network namespace, cgroups and mounts.
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the containers backend needs root")


class Cluster:
    """kubectl against the backend, and the waits a user does by eye."""

    def __init__(self, backend: ContainerKube) -> None:
        self.backend = backend
        self.kubeconfig = str(backend.kubeconfig)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120) -> str:
        return kubectl.run(self.kubeconfig, *args, input=input, check=check, timeout=timeout)

    def get(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.kubectl("get", kind, name, "-n", namespace, "-o", "json"))
        return found

    def items(self, kind: str, namespace: str, *selector: str) -> list[dict[str, Any]]:
        found = json.loads(self.kubectl("get", kind, "-n", namespace, *selector, "-o", "json"))
        items: list[dict[str, Any]] = found["items"]
        return items

    def namespace(self, name: str) -> str:
        self.kubectl("create", "namespace", name)
        return name

    def delete_namespace(self, name: str) -> None:
        self.kubectl("delete", "namespace", name, "--wait=true", "--timeout=300s", check=False, timeout=330)

    def wait_for(self, check: Any, what: str, timeout: float = READY_TIMEOUT) -> Any:
        return eventually(check, timeout, lambda: f"{what}\n{self.describe()}", every=POLL)

    def ray_nodes_alive(self, namespace: str, head: str) -> int:
        """How many Ray nodes the head's GCS counts alive (asked from the head container)."""
        count = self.kubectl(
            "exec", "-n", namespace, head, "-c", "ray-head", "--", "python", "-c",
            "import ray; ray.init(address='auto', logging_level='ERROR'); print(sum(n['Alive'] for n in ray.nodes()))",
            check=False, timeout=120,
        ).strip().splitlines()  # fmt: skip
        return int(count[-1]) if count and count[-1].isdigit() else 0

    @contextlib.contextmanager
    def port_forward(self, namespace: str, target: str, port: int) -> Iterator[int]:
        """`kubectl port-forward` (through the API server and the kubelet); yields the local port."""
        process = subprocess.Popen(
            ["kubectl", "--kubeconfig", self.kubeconfig, "port-forward", "-n", namespace, target, f":{port}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert process.stdout is not None
            line = process.stdout.readline()  # "Forwarding from 127.0.0.1:NNNNN -> PORT"
            found = re.search(r"127\.0\.0\.1:(\d+)", line)
            assert found, (
                f"kubectl port-forward said {line!r}; {process.stderr.read() if process.stderr else ''}"
            )
            yield int(found.group(1))
        finally:
            process.terminate()
            process.communicate(timeout=10)  # reaps it and closes its pipes

    def operator_pod(self) -> dict[str, Any]:
        """The Helm-installed operator's pod, once it is Ready."""

        def ready() -> dict[str, Any] | None:
            for pod in self.items("pods", OPERATOR_NS, "-l", "app.kubernetes.io/name=kuberay-operator"):
                statuses = pod["status"].get("containerStatuses", [])
                if (
                    not pod["metadata"].get("deletionTimestamp")
                    and statuses
                    and all(s["ready"] for s in statuses)
                ):
                    return pod
            return None

        pod: dict[str, Any] = self.wait_for(ready, "the operator's pod Ready")
        return pod

    def describe(self) -> str:
        """What a failed wait shows: every pod and the recent events."""
        pods = self.kubectl("get", "pods", "-A", "-o", "wide", check=False)
        events = self.kubectl("get", "events", "-A", "--sort-by=.lastTimestamp", check=False)
        return f"pods:\n{pods}\nevents (last 40):\n" + "\n".join(events.splitlines()[-40:])
