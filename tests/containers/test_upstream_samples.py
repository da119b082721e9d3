"""Upstream's RayCluster samples (`../shared/upstream-samples/`, unchanged) on real containers (issue 47),
applied with `kubectl apply -f` as upstream's users apply them, each until its cluster is ready and every Ray
node it starts is alive in the head's GCS.

These are the samples this backend's one node holds: Ray 2.52.0 (the Ray image we build), no GPU or TPU, no
package downloads (pods here have no way out of the machine), no batch scheduler, and at most 1.9 CPUs of
requests (the node has two; the operator asks 100m). The rest are checked object by object on the other
backends.
"""

from __future__ import annotations

from typing import Any

import pytest

from containers.cluster import NEEDS_ROOT, Cluster
from support.shared import UPSTREAM_SAMPLES, yaml_documents

pytestmark = [NEEDS_ROOT, pytest.mark.containers, pytest.mark.slow, pytest.mark.timeout(900)]

SAMPLES = [
    "ray-cluster.complete.yaml",  # a head and a worker, with log volumes and lifecycle hooks
    "ray-cluster.custom-head-service.yaml",  # the head Service as the user writes it
    "ray-cluster.autoscaler-v2.yaml",  # the v2 autoscaler's sidecar, no workers until asked
    "ray-cluster.py-spy.yaml",  # SYS_PTRACE added to the head, for py-spy
]


def _sample_cluster(sample: str) -> dict[str, Any]:
    (cluster,) = [d for d in yaml_documents(UPSTREAM_SAMPLES / sample) if d and d.get("kind") == "RayCluster"]
    result: dict[str, Any] = cluster
    return result


def _ray_pods(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    return cluster.items("pods", namespace, "-l", f"ray.io/cluster={name}")


@pytest.mark.parametrize("sample", SAMPLES)
def test_an_upstream_sample_runs_to_ready_in_containers(
    cluster: Cluster, operator: None, namespace: str, sample: str
) -> None:
    spec = _sample_cluster(sample)
    name = spec["metadata"]["name"]
    expected_pods = 1 + sum(group.get("replicas", 0) for group in spec["spec"].get("workerGroupSpecs", []))
    cluster.kubectl("apply", "-n", namespace, "-f", str(UPSTREAM_SAMPLES / sample))

    def ready() -> bool:
        status = cluster.get("raycluster", name, namespace).get("status", {})
        return bool(status.get("state") == "ready")

    cluster.wait_for(ready, f"{sample}: RayCluster {name} ready")
    pods = _ray_pods(cluster, namespace, name)
    assert len(pods) == expected_pods, [p["metadata"]["name"] for p in pods]
    assert all(p["status"]["phase"] == "Running" for p in pods), [p["status"] for p in pods]
    (head,) = [p["metadata"]["name"] for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    cluster.wait_for(
        lambda: cluster.ray_nodes_alive(namespace, head) == expected_pods,
        f"{sample}: {expected_pods} Ray node(s) alive",
        timeout=240,
    )

    if sample == "ray-cluster.custom-head-service.yaml":
        service = cluster.get("service", "custom-ray-head-service-name", namespace)
        assert service["spec"]["type"] == "LoadBalancer"
        assert service["metadata"]["labels"]["custom-label"] == "custom-ray-head-service-label"
        assert 12345 in {p["port"] for p in service["spec"]["ports"]}, service["spec"]["ports"]
    if sample == "ray-cluster.autoscaler-v2.yaml":
        head_pod = cluster.get("pod", head, namespace)
        assert "autoscaler" in {c["name"] for c in head_pod["spec"]["containers"]}
        assert all(s["ready"] for s in head_pod["status"]["containerStatuses"]), head_pod["status"]
    if sample == "ray-cluster.py-spy.yaml":
        # py-spy reads another process's memory through ptrace, which the sample adds SYS_PTRACE for.
        dumped = cluster.kubectl(
            "exec", "-n", namespace, head, "-c", "ray-head", "--", "bash", "-c",
            "py-spy dump --pid \"$(pgrep -f 'ray/dashboard/dashboard.py' | head -1)\"",
            timeout=120,
        )  # fmt: skip
        assert "Thread" in dumped, dumped[-2000:]
