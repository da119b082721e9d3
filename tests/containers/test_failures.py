"""Failure where users meet it (issue 47), on real containers: a head container killed by its cgroup's OOM
killer, the operator's pod deleted while it creates a cluster, the kubelet restarted under running Ray.
In each, the outcome upstream's users expect: the head comes back (`OOMKilled`, restarted by the kubelet)
and the workers rejoin it; the new operator finishes the cluster with nothing made twice; the kubelet's
restart touches no container.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from containers.cluster import NEEDS_ROOT, OPERATOR_NS, Cluster

pytestmark = [NEEDS_ROOT, pytest.mark.containers, pytest.mark.slow, pytest.mark.timeout(1200)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _ray_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return cluster.items("pods", namespace, "-l", "ray.io/cluster=minimal")


def _head(cluster: Cluster, namespace: str) -> dict[str, Any]:
    (head,) = [
        p for p in _ray_pods(cluster, namespace) if p["metadata"]["labels"]["ray.io/node-type"] == "head"
    ]
    return head


def _ready(cluster: Cluster, namespace: str) -> bool:
    status = cluster.get("raycluster", "minimal", namespace).get("status", {})
    return bool(status.get("state") == "ready")


# 64 processes of 48 MB each, every page written: 3 GiB in all, past the head's limit whatever Ray holds.
_MEMORY_HOGS = """
import os, time
for _ in range(64):
    if os.fork() == 0:
        block = bytearray(48 * 2**20)
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(120)
        os._exit(0)
time.sleep(60)
"""


def _restarts(pod: dict[str, Any]) -> int:
    return sum(s["restartCount"] for s in pod["status"].get("containerStatuses", []))


def test_a_head_oom_killed_by_its_cgroup_restarts_and_the_worker_rejoins(
    cluster: Cluster, operator: None, namespace: str
) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
    cluster.wait_for(lambda: _ready(cluster, namespace), "the RayCluster ready")
    head = _head(cluster, namespace)["metadata"]["name"]
    cluster.wait_for(lambda: cluster.ray_nodes_alive(namespace, head) == 2, "two Ray nodes")
    # The kernel's OOM killer picks the process of the highest badness in a cgroup over its limit (2 Gi): its
    # oom_score_adj (a share of the limit) plus its memory. Ray's processes are raised to the top (anyone may
    # raise their own), and the memory is taken by many small processes at the container's own score, so the
    # one killed is one of Ray's: `ray start --block` then ends the container, as a head over its limit ends.
    cluster.kubectl(
        "exec", "-n", namespace, head, "-c", "ray-head", "--", "bash", "-c",
        "for f in /proc/[0-9]*/oom_score_adj; do echo 1000 > $f; done 2> /dev/null; true",
    )  # fmt: skip
    cluster.kubectl("exec", "-n", namespace, head, "-c", "ray-head", "--", "python", "-c", _MEMORY_HOGS,
                    check=False, timeout=300)  # fmt: skip

    def oom_killed() -> dict[str, Any] | None:
        pod = _head(cluster, namespace)
        (status,) = [s for s in pod["status"]["containerStatuses"] if s["name"] == "ray-head"]
        terminated = status.get("lastState", {}).get("terminated", {})
        return status if terminated.get("reason") == "OOMKilled" else None

    status = cluster.wait_for(oom_killed, "the head container's last state OOMKilled", timeout=240)
    assert status["restartCount"] >= 1, status
    # Healed in place: the same head pod (restartPolicy Always), the worker back in the new Ray cluster.
    cluster.wait_for(lambda: _ready(cluster, namespace), "the RayCluster ready again")
    assert _head(cluster, namespace)["metadata"]["name"] == head
    cluster.wait_for(
        lambda: cluster.ray_nodes_alive(namespace, head) == 2, "the worker rejoined the head", timeout=420
    )
    assert len(_ray_pods(cluster, namespace)) == 2


def test_the_operator_deleted_mid_reconcile_finishes_the_cluster_with_nothing_twice(
    cluster: Cluster, operator: None, namespace: str
) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
    # As soon as the operator has started on the cluster (its head Service or a pod exists), it goes.
    cluster.wait_for(
        lambda: _ray_pods(cluster, namespace) or cluster.items("services", namespace), "the operator at work"
    )
    old = cluster.items("pods", OPERATOR_NS, "-l", "app.kubernetes.io/name=kuberay-operator")
    cluster.kubectl("delete", "pod", "-n", OPERATOR_NS, *(p["metadata"]["name"] for p in old), "--wait=false")
    cluster.wait_for(lambda: _ready(cluster, namespace), "the RayCluster ready under the new operator")
    pods = _ray_pods(cluster, namespace)
    kinds = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
    assert kinds == ["head", "worker"], [p["metadata"]["name"] for p in pods]
    services = [s["metadata"]["name"] for s in cluster.items("services", namespace)]
    assert services == ["minimal-head-svc"], services
    new = cluster.items("pods", OPERATOR_NS, "-l", "app.kubernetes.io/name=kuberay-operator")
    assert {p["metadata"]["name"] for p in new}.isdisjoint(p["metadata"]["name"] for p in old)


def test_a_kubelet_restart_leaves_running_ray_alone(cluster: Cluster, operator: None, namespace: str) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
    cluster.wait_for(lambda: _ready(cluster, namespace), "the RayCluster ready")
    head = _head(cluster, namespace)["metadata"]["name"]
    cluster.wait_for(lambda: cluster.ray_nodes_alive(namespace, head) == 2, "two Ray nodes")
    before = {
        p["metadata"]["name"]: (p["metadata"]["uid"], _restarts(p)) for p in _ray_pods(cluster, namespace)
    }
    cluster.backend.restart_kubelet()
    # exec through the new kubelet, once it serves again
    cluster.wait_for(lambda: cluster.ray_nodes_alive(namespace, head) == 2, "two Ray nodes after the restart")
    after = {
        p["metadata"]["name"]: (p["metadata"]["uid"], _restarts(p)) for p in _ray_pods(cluster, namespace)
    }
    assert after == before
    assert _ready(cluster, namespace)
