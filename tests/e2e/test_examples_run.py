"""The examples on real Ray, through the user's path (issue 23 item 1's regression test): `kuberay local up
--node-mode process` with no operator flags of ours, then `kubectl apply -f examples/...`. Pods run as
local processes, so `ray start` and `ray job submit` really run; the operator, on the host, reaches each
dashboard through the API server's service proxy, which `kuberay local up` turns on.

The three submitting RayJobs run side by side, each head binding Ray's ports in a network namespace of its
own (process mode gives each pod one when run as root, as CI is; without root only one Ray cluster can run
at a time). `kubectl exec` and `kubectl
port-forward` reach the minimal RayCluster's head, and the failing RayJob runs on that cluster through
`clusterSelector`: every Ray cluster here costs a head start (about 10 core-seconds on CI's two cores).
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import ray
import yaml

from kuberay.local.ports import free_port
from support.eventually import eventually
from support.local_instance import EXAMPLES, KUBECTL_POLL, LocalInstance

# pytest-timeout's guard above the tests' own bounds (one RayJob may take READY_TIMEOUT, and there are three),
# as for the other real-Ray files: under parallel load the guard fired before the test's informative bound.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Ray on a loaded two-core machine: bounds, not measurements.
READY_TIMEOUT = 300.0
RAYJOB_MODES = {"K8sJobMode": "k8s-job-mode", "HTTPMode": "http-mode", "SidecarMode": "sidecar-mode"}


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


def test_nodes_parsed_from_ray_status() -> None:
    text = (
        "Node status\n---\nActive:\n (no active nodes)\nIdle:\n 1 headgroup\n 2 workergroup\nPending:\n 3 x\n"
    )
    assert _nodes_in(text) == 3


async def _ray_status(address: str) -> str:
    ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    process = await asyncio.create_subprocess_exec(
        ray, "status", "--address", address, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    return output.decode()


async def _ray_status_with(address: str, nodes: int, timeout: float = 90) -> str:
    """`ray status` once it lists `nodes` nodes: the head reports its nodes to the autoscaler state a few
    seconds after the RayCluster becomes ready."""
    last = [""]

    async def listed() -> str:
        last[0] = await _ray_status(address)
        return last[0] if _nodes_in(last[0]) == nodes else ""

    text: str = await eventually(
        listed, timeout, lambda: f"{nodes} nodes in `ray status`:\n{last[0]}", every=2
    )
    return text


def _example(name: str) -> dict[str, Any]:
    (obj,) = [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc]
    return obj


def _state(local: LocalInstance, kind: str, name: str, namespace: str) -> dict[str, Any]:
    status: dict[str, Any] = local.get(kind, name, namespace).get("status") or {}
    return status


@pytest.fixture(scope="module")
def minimal_cluster(local_process: LocalInstance) -> Iterator[dict[str, Any]]:
    """examples/ray-cluster.minimal.yaml applied with kubectl, until ready (starting a Ray cluster is the slow
    part, so this module's cluster tests share it); its RayCluster object."""
    namespace = local_process.namespace("cluster-one")
    local_process.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
    try:
        yield eventually(
            lambda: (c := local_process.get("raycluster", "minimal", namespace)).get("status", {}).get("state")
            == "ready" and c, READY_TIMEOUT, f"RayCluster {namespace}/minimal ready", every=KUBECTL_POLL,
        )  # fmt: skip
    finally:
        local_process.kubectl("delete", "raycluster", "minimal", "-n", namespace, "--wait=false")


def test_every_submitting_rayjob_example_succeeds(local_process: LocalInstance) -> None:
    """K8sJobMode, HTTPMode and SidecarMode, applied as they are."""
    namespace = local_process.namespace("rayjobs")
    for name in RAYJOB_MODES.values():
        local_process.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / f"ray-job.{name}.yaml"))
    greeting = yaml.safe_load(_example("ray-job.k8s-job-mode.yaml")["spec"]["runtimeEnvYAML"])["env_vars"]
    for mode, name in RAYJOB_MODES.items():
        done = eventually(
            lambda name=name: (s := _state(local_process, "rayjob", name, namespace)).get("jobDeploymentStatus")
            in ("Complete", "Failed") and s, READY_TIMEOUT, f"RayJob {name} ({mode}) finished", every=KUBECTL_POLL,
        )  # fmt: skip
        assert (done["jobDeploymentStatus"], done.get("jobStatus"), done.get("succeeded")) == (
            "Complete", "SUCCEEDED", 1,
        ), f"{mode}: {done}"  # fmt: skip
        if mode == "K8sJobMode":
            # The submitter follows the job's output (before the TTL removes it): the runtime env reached
            # the tasks, and they ran.
            expected = f"{greeting['GREETING']} {sum(i * i for i in range(10))}"
            assert expected in local_process.kubectl("logs", "-n", namespace, "-l", f"job-name={name}")
    local_process.kubectl("delete", "rayjobs", "--all", "-n", namespace, "--wait=false")


# Last in the file: the module's cluster is made for these and removed at the module's end, so it does not
# idle while the RayJobs above run.
async def test_the_minimal_raycluster_is_a_real_ray_cluster(minimal_cluster: dict[str, Any]) -> None:
    text = await _ray_status_with(f"{minimal_cluster['status']['head']['podIP']}:6379", 2)
    assert _nodes_in(text) == 2, text


def test_kubectl_exec_and_port_forward_reach_the_head(
    local_process: LocalInstance, minimal_cluster: dict[str, Any]
) -> None:
    """`kubectl exec` into the head runs `ray status` there; `kubectl port-forward svc/<cluster>-head-svc
    8265` serves the dashboard; neither leaves a process or a listening port behind."""
    cluster = minimal_cluster
    namespace, head = cluster["metadata"]["namespace"], cluster["status"]["head"]["podName"]
    status = local_process.kubectl("exec", "-n", namespace, head, "--", "ray", "status")
    assert _nodes_in(status) == 2, status
    port = free_port()
    forwarder = subprocess.Popen(
        ["kubectl", "--kubeconfig", local_process.kubeconfig, "port-forward", "-n", namespace,
         f"svc/{cluster['metadata']['name']}-head-svc", f"{port}:8265"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert forwarder.stdout is not None
        assert "Forwarding from 127.0.0.1" in forwarder.stdout.readline()
        version = httpx.get(f"http://127.0.0.1:{port}/api/version", timeout=60)
        assert version.status_code == 200
        assert version.json()["ray_version"] == ray.__version__
    finally:
        forwarder.send_signal(signal.SIGINT)
        forwarder.communicate(timeout=30)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/api/version", timeout=5)
    left = subprocess.run(["pgrep", "-f", "^ray status$"], capture_output=True, check=False)
    assert left.returncode != 0, "the exec's `ray status` is still running"


def test_a_failing_entrypoint_ends_failed_with_rays_message(
    local_process: LocalInstance, minimal_cluster: dict[str, Any]
) -> None:
    """A K8sJobMode RayJob whose entrypoint exits 3, on the minimal cluster (`clusterSelector`): it ends Failed
    with Ray's own message, and the cluster it did not make is left running."""
    namespace = minimal_cluster["metadata"]["namespace"]
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "fails"},
        "spec": {
            "submissionMode": "K8sJobMode",
            "entrypoint": "python -c \"import sys; print('boom'); sys.exit(3)\"",
            "clusterSelector": {"ray.io/cluster": minimal_cluster["metadata"]["name"]},
        },
    }
    local_process.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(job))
    failed = eventually(
        lambda: (s := _state(local_process, "rayjob", "fails", namespace)).get("jobDeploymentStatus") == "Failed"
        and s, READY_TIMEOUT, "RayJob fails Failed", every=KUBECTL_POLL,
    )  # fmt: skip
    assert (failed["jobStatus"], failed["reason"]) == ("FAILED", "AppFailed")
    assert failed["message"].startswith("Job entrypoint command failed with exit code 3")
    assert "boom" in failed["message"]
    assert failed["rayClusterName"] == minimal_cluster["metadata"]["name"]
    assert _state(local_process, "raycluster", "minimal", namespace).get("state") == "ready"
    local_process.kubectl("delete", "rayjob", "fails", "-n", namespace, "--wait=false")


def test_a_rayjob_whose_runtime_env_pip_installs_a_package_succeeds(
    local_process: LocalInstance, minimal_cluster: dict[str, Any]
) -> None:
    """An HTTPMode RayJob on the minimal cluster whose `runtime_env` pip-installs a package that neither the
    host nor the head's Python has: Ray installs it from the package index inside the head's pod, which
    reaches the index through the node's NAT as pods on a real node do."""
    package = "humanize"
    missing = subprocess.run([sys.executable, "-c", f"import {package}"], capture_output=True, check=False)
    assert missing.returncode != 0, f"{package} is installed here, so the job would not need its runtime_env"
    namespace = minimal_cluster["metadata"]["namespace"]
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "pip"},
        "spec": {
            "submissionMode": "HTTPMode",
            "entrypoint": f'python -c "import {package}; print({package}.intcomma(1234567))"',
            "runtimeEnvYAML": yaml.safe_dump({"pip": [package]}),
            "clusterSelector": {"ray.io/cluster": minimal_cluster["metadata"]["name"]},
        },
    }
    local_process.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(job))
    # pip's download and install come on top of the job's start.
    done = eventually(
        lambda: (s := _state(local_process, "rayjob", "pip", namespace)).get("jobDeploymentStatus")
        in ("Complete", "Failed") and s, READY_TIMEOUT, "RayJob pip finished", every=KUBECTL_POLL,
    )  # fmt: skip
    assert (done["jobDeploymentStatus"], done.get("jobStatus")) == ("Complete", "SUCCEEDED"), done
    local_process.kubectl("delete", "rayjob", "pip", "-n", namespace, "--wait=false")
