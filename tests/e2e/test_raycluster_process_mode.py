"""A RayCluster on localkube in process mode is a real Ray cluster (issue 4's end-to-end check).

`ray-cluster.sample.yaml` goes through the real operator into pods that run `ray start`; the GCS of each
cluster then reports a head and a worker node. As root, two clusters of the same name run side by side in
two namespaces (each pod has its own network namespace and address); without root only one Ray cluster can
run at a time, so only one is started. `kubectl exec` and `kubectl port-forward` reach the head of the same
clusters.
"""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import ray
import yaml

from localkube_process import LocalKubeProcess
from operator_process import OperatorProcess, free_port
from shared import UPSTREAM_SAMPLES

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 240.0


@dataclass(frozen=True)
class RayClusters:
    """The sample RayCluster, ready, in each of `namespaces` of `server` (one Ray cluster per namespace)."""

    server: LocalKubeProcess
    namespaces: list[str]
    clusters: list[dict[str, Any]]

    @property
    def name(self) -> str:
        return str(self.clusters[0]["metadata"]["name"])


@pytest.fixture(scope="module")
def ray_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayClusters]:
    """localkube in process mode with the operator and the sample RayCluster, shared by this module's tests
    (starting Ray clusters is the slow part)."""
    data_dir = tmp_path_factory.mktemp("localkube-ray")
    server = LocalKubeProcess(data_dir, extra_args=["--node-mode", "process"]).start()
    operator = None
    try:
        server.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
        operator = OperatorProcess(server.kubeconfig, data_dir / "operator.log").start()
        (sample,) = [
            d for d in yaml.safe_load_all((UPSTREAM_SAMPLES / "ray-cluster.sample.yaml").read_text()) if d
        ]
        namespaces = ["one", "two"] if os.geteuid() == 0 else ["one"]
        for namespace in namespaces:
            server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
            server.apply([{**sample, "metadata": {**sample["metadata"], "namespace": namespace}}])
        name = sample["metadata"]["name"]
        clusters = [_until_ready(server, namespace, name) for namespace in namespaces]
        yield RayClusters(server, namespaces, clusters)
    finally:
        if operator is not None:
            operator.stop()
        server.stop(timeout=60)  # it stops every pod's processes (Ray's GCS needs SIGKILL after 10 s) first


def _nodes_in(status_text: str) -> int:
    """The nodes `ray status` lists as active or idle (lines such as ` 1 headgroup`)."""
    count, section = 0, ""
    for line in status_text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":"):
            section = stripped
        elif section in ("Active:", "Idle:") and stripped[:1].isdigit():
            count += int(stripped.split()[0])
    return count


async def _ray_status(address: str) -> str:
    ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    process = await asyncio.create_subprocess_exec(
        ray, "status", "--address", address, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    return output.decode()


def _until_ready(server: LocalKubeProcess, namespace: str, name: str) -> dict[str, Any]:
    path = f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"
    deadline = time.monotonic() + READY_TIMEOUT
    with server.client() as client:
        while True:
            cluster: dict[str, Any] = client.get(path).json()
            if (cluster.get("status") or {}).get("state") == "ready":
                return cluster
            assert time.monotonic() < deadline, (
                f"RayCluster {namespace}/{name} is not ready: {cluster.get('status')}"
            )
            time.sleep(1)


def test_nodes_parsed_from_ray_status() -> None:
    text = (
        "Node status\n---\nActive:\n (no active nodes)\nIdle:\n 1 headgroup\n 2 workergroup\nPending:\n 3 x\n"
    )
    assert _nodes_in(text) == 3


async def test_the_sample_raycluster_is_a_real_ray_cluster(ray_clusters: RayClusters) -> None:
    head_ips = [cluster["status"]["head"]["podIP"] for cluster in ray_clusters.clusters]
    assert len(set(head_ips)) == len(ray_clusters.namespaces)
    for head_ip in head_ips:
        status = await _ray_status(f"{head_ip}:6379")
        assert _nodes_in(status) == 2, status


def _kubectl(server: LocalKubeProcess, *args: str) -> list[str]:
    return ["kubectl", "--kubeconfig", str(server.kubeconfig), *args]


def test_kubectl_exec_and_port_forward_reach_the_head(ray_clusters: RayClusters) -> None:
    """`kubectl exec` into the head runs `ray status` there; `kubectl port-forward svc/<cluster>-head-svc
    8265` serves the dashboard; neither leaves a process or a listening port behind."""
    server, namespace = ray_clusters.server, ray_clusters.namespaces[0]
    head = ray_clusters.clusters[0]["status"]["head"]["podName"]
    status = subprocess.run(
        _kubectl(server, "exec", "-n", namespace, head, "--", "ray", "status"),
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert _nodes_in(status.stdout) == 2, status.stdout
    local = free_port()
    service = f"svc/{ray_clusters.name}-head-svc"
    forwarder = subprocess.Popen(
        _kubectl(server, "port-forward", "-n", namespace, service, f"{local}:8265"),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert forwarder.stdout is not None
        assert "Forwarding from 127.0.0.1" in forwarder.stdout.readline()
        version = httpx.get(f"http://127.0.0.1:{local}/api/version", timeout=60)
        assert version.status_code == 200
        assert version.json()["ray_version"] == ray.__version__
    finally:
        forwarder.send_signal(signal.SIGINT)
        forwarder.communicate(timeout=30)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{local}/api/version", timeout=5)
    left = subprocess.run(["pgrep", "-f", "^ray status$"], capture_output=True)
    assert left.returncode != 0, "the exec's `ray status` is still running"
