"""The real `kuberay-operator` warns about ray.io objects no controller of it handles (issue 22): a RayCronJob
while its gate is off, a RayService while no RayService controller is registered, one Warning Event per
object generation; a kind whose controller runs gets none."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay.api.features import Feature, FeatureGates
from kuberay.controllers.unhandled import REASON, message, ray_resources
from kuberay.operator.registry import BUILTIN
from kuberay.runtime.client import Client
from kuberay.runtime.resources import EVENT
from support.eventually import eventually
from support.operator_process import OperatorProcess

from ..runtime.kube import client_for, new_namespace

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
RESOURCES = {resource.kind: resource for resource in ray_resources()}


def example(name: str) -> dict[str, Any]:
    (obj,) = [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc]
    return obj


@pytest.fixture
async def namespace(localkube: Any, tmp_path: Path) -> AsyncIterator[tuple[Client, str]]:
    client = client_for(localkube)
    name = await new_namespace(client)
    operator = OperatorProcess(localkube.kubeconfig, tmp_path / "operator.log", f"--watch-namespace={name}")
    operator.start()
    try:
        yield client, name
    finally:
        operator.stop()
        await client.close()


async def warnings(client: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    found = await client.list(EVENT, namespace)
    return [e for e in found.items if e["involvedObject"].get("name") == name and e.get("reason") == REASON]


async def test_a_kind_without_a_controller_gets_one_warning_per_generation(namespace) -> None:
    client, ns = namespace
    cron = {**example("ray-cronjob.yaml"), "metadata": {"name": "cron", "namespace": ns}}
    await client.create(RESOURCES["RayCronJob"], cron)
    latest: list[dict[str, Any]] = []

    async def warned(count: int) -> bool:
        latest[:] = await warnings(client, ns, "cron")
        return sum(e.get("count", 1) for e in latest) == count

    await eventually(lambda: warned(1))
    assert latest[0]["type"] == "Warning"
    assert latest[0]["message"] == message("RayCronJob", FeatureGates())
    assert "--feature-gates RayCronJob=true" in latest[0]["message"]
    # A label is not a new generation: no second warning. The watcher works through one FIFO queue, so
    # once a later object's warning is out, the label change has been seen.
    await client.patch(RESOURCES["RayCronJob"], "cron", {"metadata": {"labels": {"a": "b"}}}, ns)
    await client.create(RESOURCES["RayCronJob"], {**cron, "metadata": {"name": "later", "namespace": ns}})
    await eventually(lambda: _any(warnings(client, ns, "later")))
    assert await warned(1)
    await client.patch(RESOURCES["RayCronJob"], "cron", {"spec": {"schedule": "0 * * * *"}}, ns)
    await eventually(lambda: warned(2))


async def test_a_kind_with_a_running_controller_gets_none(namespace) -> None:
    client, ns = namespace
    cluster = {**example("ray-cluster.minimal.yaml"), "metadata": {"name": "handled", "namespace": ns}}
    await client.create(RESOURCES["RayCluster"], cluster)
    cron = {**example("ray-cronjob.yaml"), "metadata": {"name": "cron", "namespace": ns}}
    await client.create(RESOURCES["RayCronJob"], cron)
    await eventually(lambda: _any(warnings(client, ns, "cron")))  # the watcher has seen this namespace
    assert await warnings(client, ns, "handled") == []


async def _any(found: Any) -> bool:
    return bool(await found)


def test_the_registry_installs_the_watcher_last() -> None:
    assert BUILTIN[-1].name == "unhandled"


def test_the_message_names_the_gate_only_while_it_is_off() -> None:
    assert "--feature-gates RayCronJob=true" in message("RayCronJob", FeatureGates())
    gate_on = FeatureGates({Feature.RAY_CRON_JOB: True})
    assert "runs no controller" in message("RayCronJob", gate_on)
    assert "runs no controller" in message("RayService", FeatureGates())
