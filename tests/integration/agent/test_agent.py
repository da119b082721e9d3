"""`localkube agent` in simulate mode attached over HTTP to an API server, as a user attaches it: a localkube
that runs no node of its own (`localkube serve --no-node`), and the real control plane (`realkube`, where the
agent has the node's own credentials, judged by the Node authorizer and NodeRestriction). The Node registers
Ready with its Lease renewed, pods run and their deletion completes, a RayCluster made by the real operator
becomes ready, and an agent killed and started again picks up what changed while it was away."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import LEASE, NODE, POD
from support.agent_process import AgentProcess
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess
from support.realkube_process import SPARE_NODE_NAME

from ..runtime.kube import client_for, new_namespace

REPO = Path(__file__).resolve().parents[3]
LEASE_SECONDS = 4  # renewed every second, so the test sees a renewal soon


@dataclass(frozen=True)
class Attached:
    server: LocalKubeProcess
    node_name: str


@pytest.fixture(scope="module", params=["localkube", pytest.param("realkube", marks=pytest.mark.realkube)])
def attached(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attached]:
    data = tmp_path_factory.mktemp("agent")
    with contextlib.ExitStack() as cleanup:
        if request.param == "realkube":
            server: LocalKubeProcess = request.getfixturevalue("realkube")
            # The session's own node runs already: this agent is a second node, with that node's credentials.
            kubeconfig, node_name = server.spare_node_kubeconfig, SPARE_NODE_NAME
            cleanup.enter_context(server.placing_on(node_name))
        else:
            server = LocalKubeProcess(data / "localkube", extra_args=["--no-node"]).start()
            cleanup.callback(server.stop)
            server.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
            kubeconfig, node_name = server.kubeconfig, "agent-node"
        agent = AgentProcess(
            kubeconfig,
            data / "agent.log",
            f"--node-lease-duration-seconds={LEASE_SECONDS}",
            node_name=node_name,
        ).start()
        cleanup.callback(agent.stop)
        yield Attached(server, node_name)


@pytest.fixture
async def kube(attached: Attached) -> AsyncIterator[tuple[Client, str]]:
    client = client_for(attached.server)
    try:
        yield client, await new_namespace(client)
    finally:
        await client.close()


def condition(obj: dict[str, Any], kind: str) -> str | None:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind]
    return found[0]["status"] if found else None


def pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]},
    }


async def test_the_node_registers_ready_and_renews_its_lease(
    attached: Attached, kube: tuple[Client, str]
) -> None:
    client, _ = kube
    node_name = attached.node_name

    async def node_ready() -> bool:
        with_node = await client.list(NODE)
        return any(
            n["metadata"]["name"] == node_name and condition(n, "Ready") == "True" for n in with_node.items
        )

    await eventually(node_ready)
    node = await client.get(NODE, node_name)
    assert node["status"]["capacity"]["cpu"] and node["status"]["allocatable"]["pods"]
    leases: list[dict[str, Any]] = []

    async def leased() -> bool:
        found = await client.list(LEASE, "kube-node-lease")
        leases[:] = [lease["spec"] for lease in found.items if lease["metadata"]["name"] == node_name]
        return bool(leases)

    await eventually(leased)
    first = leases[0]
    assert first["holderIdentity"] == node_name and first["leaseDurationSeconds"] == LEASE_SECONDS

    async def renewed() -> bool:
        lease = await client.get(LEASE, node_name, "kube-node-lease")
        return bool(lease["spec"]["renewTime"] > first["renewTime"])

    await eventually(renewed, timeout=30)


async def test_a_pod_runs_on_the_agent_and_its_deletion_completes(
    attached: Attached, kube: tuple[Client, str]
) -> None:
    client, namespace = kube
    await client.create(POD, pod("sleeper"), namespace)

    async def running() -> bool:
        found = await client.get(POD, "sleeper", namespace)
        return found["status"].get("phase") == "Running" and condition(found, "Ready") == "True"

    await eventually(running)
    found = await client.get(POD, "sleeper", namespace)
    assert found["spec"]["nodeName"] == attached.node_name
    assert found["status"]["podIP"] and condition(found, "PodScheduled") == "True"
    await client.delete(POD, "sleeper", namespace)  # graceful: the agent finishes it

    async def gone() -> bool:
        try:
            await client.get(POD, "sleeper", namespace)
        except errors.NotFoundError:
            return True
        return False

    await eventually(gone)


async def test_a_raycluster_becomes_ready_on_the_agent(
    attached: Attached, kube: tuple[Client, str], tmp_path: Path
) -> None:
    client, namespace = kube
    operator = OperatorProcess(
        attached.server.kubeconfig, tmp_path / "operator.log", f"--watch-namespace={namespace}"
    )
    operator.start()
    try:
        manifest = yaml.safe_load((REPO / "examples" / "ray-cluster.minimal.yaml").read_text())
        manifest["metadata"]["namespace"] = namespace
        await client.create(RAYCLUSTER, manifest, namespace)

        async def ready() -> bool:
            cluster = await client.get(RAYCLUSTER, "minimal", namespace)
            return (cluster.get("status") or {}).get("state") == "ready"

        await eventually(ready, timeout=120)
        pods = (await client.list(POD, namespace)).items
        assert len(pods) == 2 and {p["spec"]["nodeName"] for p in pods} == {attached.node_name}
        await client.delete(RAYCLUSTER, "minimal", namespace)
    finally:
        operator.stop()


async def test_a_restarted_agent_runs_what_was_created_while_it_was_away(
    attached: Attached, kube: tuple[Client, str], tmp_path: Path
) -> None:
    client, namespace = kube
    # A second node, as the admin (the node's own credentials name only the first); removed at the end so
    # that no later test's pod lands on it.
    second = AgentProcess(
        attached.server.kubeconfig, tmp_path / "agent.log", node_name="agent-restarted"
    ).start()

    async def registered() -> bool:
        try:
            return condition(await client.get(NODE, "agent-restarted"), "Ready") == "True"
        except errors.NotFoundError:
            return False

    await eventually(registered)
    second.kill()
    away = pod("while-away")
    away["spec"]["nodeName"] = "agent-restarted"  # bound to the stopped node: nothing runs it yet
    await client.create(POD, away, namespace)
    second.start()
    try:

        async def running() -> bool:
            found = await client.get(POD, "while-away", namespace)
            return (found.get("status") or {}).get("phase") == "Running"

        await eventually(running)
    finally:
        second.stop()
        await client.delete(NODE, "agent-restarted")
