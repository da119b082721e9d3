"""Ray's autoscaler on real containers (issue 47): examples/ray-cluster.autoscaler.yaml, its sidecar talking
to the API server from the head pod (the `kubernetes` Service, through kube-proxy) as the cluster's own
ServiceAccount; a task that needs a CPU makes it add a worker, which runs the task, and the idle worker is
removed after `idleTimeoutSeconds` (60).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from containers.cluster import NEEDS_ROOT, Cluster

pytestmark = [NEEDS_ROOT, pytest.mark.containers, pytest.mark.slow, pytest.mark.timeout(1200)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ray-cluster.autoscaler.yaml"
NAME = "autoscaling"
# One task that needs a whole CPU: the head has none for tasks (num-cpus 0).
DRIVER = """
import socket, ray
ray.init(address="auto", logging_level="ERROR")
print("RAN ON", ray.get(ray.remote(num_cpus=1)(lambda: socket.gethostname()).remote()))
"""


def _workers(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return cluster.items("pods", namespace, "-l", f"ray.io/cluster={NAME},ray.io/node-type=worker")


def test_the_autoscaler_adds_a_worker_for_a_task_and_removes_it_when_idle(
    cluster: Cluster, operator: None, namespace: str
) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLE))

    def ready() -> dict[str, Any] | None:
        found = cluster.get("raycluster", NAME, namespace)
        return found if found.get("status", {}).get("state") == "ready" else None

    head = cluster.wait_for(ready, "the RayCluster ready")["status"]["head"]["podName"]
    assert _workers(cluster, namespace) == []
    ran = cluster.kubectl(
        "exec", "-n", namespace, head, "-c", "ray-head", "--", "python", "-c", DRIVER, timeout=600
    )
    (worker,) = _workers(cluster, namespace)
    assert f"RAN ON {worker['metadata']['name']}" in ran, ran[-2000:]
    spec = cluster.get("raycluster", NAME, namespace)["spec"]["workerGroupSpecs"][0]
    assert spec["replicas"] == 1

    def scaled_down() -> bool:
        replicas = cluster.get("raycluster", NAME, namespace)["spec"]["workerGroupSpecs"][0]["replicas"]
        return replicas == 0 and not _workers(cluster, namespace)

    cluster.wait_for(scaled_down, "the idle worker removed, replicas 0")
    logs = cluster.kubectl("logs", "-n", namespace, head, "-c", "autoscaler")
    assert "Adding 1 node(s) of type elastic" in logs, logs[-2000:]  # the scale-up was its decision
