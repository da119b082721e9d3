"""The real `kuberay-operator` and its `RayCronJob` gate: on, the controller runs and answers (no `NoController`
Warning); off, no RayCronJob controller runs and the object gets the Warning instead. A real `@every 5s`
schedule runs in tests/e2e/test_raycronjob_local_up.py."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from integration.runtime.kube import client_for, new_namespace
from kuberay.controllers.unhandled import REASON
from kuberay.rayresources import RAYCRONJOB
from kuberay.runtime.client import Client
from kuberay.runtime.resources import EVENT
from support.eventually import eventually
from support.operator_process import OperatorProcess

from .test_raycronjob import cronjob


@contextlib.asynccontextmanager
async def operator(
    localkube: Any, log: Path, *flags: str
) -> AsyncIterator[tuple[Client, str, OperatorProcess]]:
    client = client_for(localkube)
    namespace = await new_namespace(client)
    process = OperatorProcess(localkube.kubeconfig, log, f"--watch-namespace={namespace}", *flags).start()
    try:
        yield client, namespace, process
    finally:
        process.stop()
        await client.close()


async def controllers(process: OperatorProcess) -> set[str]:
    """The controllers the operator runs, from its `controller_runtime_max_concurrent_reconciles` series."""
    try:
        async with httpx.AsyncClient() as http:
            text = (await http.get(f"http://127.0.0.1:{process.metrics_port}/metrics")).text
    except httpx.TransportError:
        return set()  # not serving yet
    prefix = 'controller_runtime_max_concurrent_reconciles{controller="'
    return {line[len(prefix) :].split('"')[0] for line in text.splitlines() if line.startswith(prefix)}


async def no_controller_warnings(client: Client, namespace: str) -> list[dict[str, Any]]:
    listed = await client.list(EVENT, namespace)
    return [e for e in listed.items if e.get("reason") == REASON]


async def test_with_the_gate_on_the_controller_runs(localkube: Any, tmp_path: Path) -> None:
    async with operator(localkube, tmp_path / "operator.log", "--feature-gates=RayCronJob=true") as (
        client, namespace, process,
    ):  # fmt: skip
        running = await eventually(lambda: controllers(process), what="the operator's metrics")
        assert "raycronjob" in running and "unhandled-raycronjob" not in running
        # Suspended, so that its answer comes at once rather than at a tick.
        await client.create(RAYCRONJOB, cronjob(namespace, schedule="@every 5s", suspend=True))

        async def suspended() -> list[dict[str, Any]]:
            listed = await client.list(EVENT, namespace)
            return [e for e in listed.items if e.get("reason") == "SuspendedRayCronJob"]

        (event,) = await eventually(suspended, what="SuspendedRayCronJob")
        assert event.get("reportingComponent") == "raycronjob-controller"
        assert await no_controller_warnings(client, namespace) == []


async def test_with_the_gate_off_no_raycronjob_controller_runs(localkube: Any, tmp_path: Path) -> None:
    # Off by default too: tests/integration/operator/test_unhandled_kinds.py runs the operator so.
    async with operator(localkube, tmp_path / "operator.log", "--feature-gates=RayCronJob=false") as (
        client, namespace, process,
    ):  # fmt: skip
        running = await eventually(lambda: controllers(process), what="the operator's metrics")
        assert "raycronjob" not in running and "unhandled-raycronjob" in running
        await client.create(RAYCRONJOB, cronjob(namespace, schedule="@every 1s"))
        (warning,) = await eventually(lambda: no_controller_warnings(client, namespace), what="NoController")
        assert "--feature-gates RayCronJob=true" in warning["message"]
