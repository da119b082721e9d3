"""A RayCluster on localkube in process mode is a real Ray cluster (issue 4's end-to-end check).

`ray-cluster.sample.yaml` goes through the real operator into pods that run `ray start`; the GCS of each
cluster then reports a head and a worker node. As root, two clusters of the same name run side by side in
two namespaces (each pod has its own network namespace and address); without root only one Ray cluster can
run at a time, so only one is started.
"""

import asyncio
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube_process import LocalKubeProcess
from operator_process import OperatorProcess
from shared import UPSTREAM_SAMPLES

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 240.0


@pytest.fixture
def process_mode(
    localkube_factory: Callable[..., LocalKubeProcess], tmp_path: Path
) -> Iterator[LocalKubeProcess]:
    server = localkube_factory(extra_args=["--node-mode", "process"])
    server.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
    operator = OperatorProcess(server.kubeconfig, tmp_path / "operator.log").start()
    try:
        yield server
    finally:
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


async def _until_ready(server: LocalKubeProcess, namespace: str, name: str) -> dict[str, Any]:
    path = f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"
    async with asyncio.timeout(READY_TIMEOUT):
        while True:
            with server.client() as client:
                cluster: dict[str, Any] = client.get(path).json()
            if (cluster.get("status") or {}).get("state") == "ready":
                return cluster
            await asyncio.sleep(1)


def test_nodes_parsed_from_ray_status() -> None:
    text = (
        "Node status\n---\nActive:\n (no active nodes)\nIdle:\n 1 headgroup\n 2 workergroup\nPending:\n 3 x\n"
    )
    assert _nodes_in(text) == 3


async def test_the_sample_raycluster_is_a_real_ray_cluster(process_mode: LocalKubeProcess) -> None:
    (sample,) = [
        d for d in yaml.safe_load_all((UPSTREAM_SAMPLES / "ray-cluster.sample.yaml").read_text()) if d
    ]
    namespaces = ["one", "two"] if os.geteuid() == 0 else ["one"]
    for namespace in namespaces:
        process_mode.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
        process_mode.apply([{**sample, "metadata": {**sample["metadata"], "namespace": namespace}}])
    name = sample["metadata"]["name"]
    clusters = await asyncio.gather(*(_until_ready(process_mode, ns, name) for ns in namespaces))
    head_ips = [cluster["status"]["head"]["podIP"] for cluster in clusters]
    assert len(set(head_ips)) == len(namespaces)
    for head_ip in head_ips:
        status = await _ray_status(f"{head_ip}:6379")
        assert _nodes_in(status) == 2, status
