"""`localkube agent --node-mode process` attached over HTTP to a localkube without a node of its own
(`localkube serve --no-node`): its pods are local processes with the in-pod API access they have on
localkube (the `KUBERNETES_SERVICE_*` variables, a token from the TokenRequest API, the CA), and, on the real
control plane, the minimal RayCluster, made by the real operator, is a real Ray cluster."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.client import Client
from kuberay.runtime.resources import POD
from support.agent_process import AgentProcess
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

from ..integration.runtime.kube import client_for, new_namespace
from .test_examples_run import _nodes_in, _ray_status_with

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 300.0  # Ray on a loaded two-core machine: a bound, not a measurement
# Reads the API server as the pod's ServiceAccount, trusting the mounted CA; prints the HTTP status.
API_CALL = """
import os, ssl, urllib.request, urllib.error
base = "/var/run/secrets/kubernetes.io/serviceaccount/"
url = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}/api"
request = urllib.request.Request(url, headers={"Authorization": "Bearer " + open(base + "token").read()})
try:
    print("status", urllib.request.urlopen(request, context=ssl.create_default_context(cafile=base + "ca.crt")).status)
except urllib.error.HTTPError as err:
    print("status", err.code)
"""


@pytest.fixture(scope="module", params=["localkube", pytest.param("realkube", marks=pytest.mark.realkube)])
def attached(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalKubeProcess, Path]]:
    """The server and the agent's data directory (its pods' logs). On the real control plane the agent runs
    as the admin: a process node reads every ConfigMap, Secret and ServiceAccount its pods might use, which
    the Node authorizer grants a node only object by object."""
    data = tmp_path_factory.mktemp("agent-process")
    node_name = "process-node"
    with contextlib.ExitStack() as cleanup:
        if request.param == "realkube":
            server: LocalKubeProcess = request.getfixturevalue("realkube")
            # A node of its own beside the session's simulated one (which, sharing its name, reported the pods
            # as its own simulated ones, loopback addresses and all), and the only one pods can be placed on.
            cleanup.enter_context(server.placing_on(node_name))
        else:
            server = LocalKubeProcess(data / "localkube", extra_args=["--no-node"]).start()
            cleanup.callback(server.stop)
            server.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
        agent = AgentProcess(
            server.kubeconfig,
            data / "agent.log",
            "--data-dir",
            str(data / "node"),
            node_name=node_name,
            mode="process",
        ).start()
        cleanup.callback(agent.stop)
        operator = OperatorProcess(
            server.kubeconfig, data / "operator.log", "--use-kubernetes-proxy=true"
        ).start()
        cleanup.callback(operator.stop)
        yield server, data / "node"


@pytest.fixture
async def kube(attached: tuple[LocalKubeProcess, Path]) -> AsyncIterator[tuple[Client, str]]:
    client = client_for(attached[0])
    try:
        yield client, await new_namespace(client)
    finally:
        await client.close()


async def test_a_pod_reaches_the_api_server_as_its_service_account(
    attached: tuple[LocalKubeProcess, Path], kube: tuple[Client, str]
) -> None:
    client, namespace = kube
    spec = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "python", "command": ["python", "-c", API_CALL]}],
    }
    await client.create(POD, {"metadata": {"name": "caller"}, "spec": spec}, namespace)

    async def finished() -> bool:
        found = await client.get(POD, "caller", namespace)
        return (found.get("status") or {}).get("phase") in ("Succeeded", "Failed")

    await eventually(finished, 120, every=0.5)
    logs = [p.read_text() for p in (attached[1] / "pods").glob(f"{namespace}_caller_*/main/*.log")]
    assert any("status 200" in text for text in logs), logs


# On the real control plane only: on localkube, the process node and the minimal cluster on real Ray are
# tests/e2e/test_examples_run.py's, and a second Ray cluster here cost a head and a worker start.
@pytest.mark.parametrize("attached", [pytest.param("realkube", marks=pytest.mark.realkube)], indirect=True)
async def test_the_minimal_raycluster_is_a_real_ray_cluster(kube: tuple[Client, str]) -> None:
    client, namespace = kube
    manifest: dict[str, Any] = yaml.safe_load((REPO / "examples" / "ray-cluster.minimal.yaml").read_text())
    manifest["metadata"]["namespace"] = namespace
    await client.create(RAYCLUSTER, manifest, namespace)

    async def ready() -> bool:
        cluster = await client.get(RAYCLUSTER, "minimal", namespace)
        return (cluster.get("status") or {}).get("state") == "ready"

    try:
        await eventually(ready, READY_TIMEOUT, every=0.5)
        head_ip = (await client.get(RAYCLUSTER, "minimal", namespace))["status"]["head"]["podIP"]
        text = await _ray_status_with(f"{head_ip}:6379", 2)
        assert _nodes_in(text) == 2, text
    finally:
        await client.delete(RAYCLUSTER, "minimal", namespace)
