"""`NewClusterWithIncrementalUpgrade` on localkube in simulate mode: the per-cluster serve Services, the
Gateway and the HTTPRoute whose weights step by `stepSizePercent` every `intervalSeconds` within
`maxSurgePercent`, Serve's target_capacity moved on each cluster (seen by the Serve stand-in), and a
rollback when the spec returns to the active cluster's.

localkube runs no Gateway implementation, so `accept_gateway_objects` plays its part and marks the Gateway
Accepted/Programmed and the HTTPRoute Accepted/ResolvedRefs (as Istio or Envoy Gateway would), which is
what the operator waits for before it moves capacity.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from integration.rayservice.harness import (
    Operator,
    ServeStandIn,
    install_gateway_api,
    operator,
    replace_spec,
    set_env,
    start_standin,
)
from kuberay.controllers.rayservice.context import GATEWAY, HTTP_ROUTE
from kuberay.rayresources import RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.resources import SERVICE

# Slow: each step of an upgrade waits for its interval (~50 s).
# Marked so, it starts early, and its waiting overlaps the files that keep the cores busy.
pytestmark = [pytest.mark.slow, pytest.mark.timers]

SAMPLE = (
    Path(__file__).resolve().parents[3]
    / ".."
    / "shared"
    / "upstream-samples"
    / "ray-service.incremental-upgrade.yaml"
)
READY = {"type": "Accepted", "status": "True"}


def incremental_service(
    namespace: str, name: str, step: int = 25, surge: int = 50, interval: int = 1
) -> dict[str, Any]:
    (service,) = [d for d in yaml.safe_load_all(SAMPLE.read_text()) if d]
    service["metadata"] = {"name": name, "namespace": namespace}
    options = service["spec"]["upgradeStrategy"]["clusterUpgradeOptions"]
    options.update(stepSizePercent=step, maxSurgePercent=surge, intervalSeconds=interval)
    service["spec"]["rayClusterDeletionDelaySeconds"] = 1
    return service


def _condition(type_: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True",
        "reason": type_,
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


@contextlib.asynccontextmanager
async def accept_gateway_objects(op: Operator, name: str) -> AsyncIterator[None]:
    """Acts as the Gateway implementation: accepts the RayService's Gateway and HTTPRoute."""

    async def accept() -> None:
        while True:
            with contextlib.suppress(errors.NotFoundError, errors.ConflictError):
                gateway = await op.client.get(GATEWAY, f"{name}-gateway", op.namespace)
                if not (gateway.get("status") or {}).get("conditions"):
                    gateway["status"] = {"conditions": [_condition("Accepted"), _condition("Programmed")]}
                    await op.client.update_status(GATEWAY, gateway)
                route = await op.client.get(HTTP_ROUTE, f"{name}-httproute", op.namespace)
                if not (route.get("status") or {}).get("parents"):
                    parent = {"parentRef": {"name": f"{name}-gateway", "namespace": op.namespace},
                              "controllerName": "example.com/gateway",
                              "conditions": [_condition("Accepted"), _condition("ResolvedRefs")]}  # fmt: skip
                    route["status"] = {"parents": [parent]}
                    await op.client.update_status(HTTP_ROUTE, route)
            await asyncio.sleep(0.2)

    task = asyncio.create_task(accept())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def weights(op: Operator, name: str) -> dict[str, int]:
    route = await op.get(HTTP_ROUTE, f"{name}-httproute")
    backends = (((route or {}).get("spec") or {}).get("rules") or [{}])[0].get("backendRefs") or []
    return {b["name"]: b["weight"] for b in backends}


async def _start(localkube: Any, op: Operator, name: str, interval: int = 1) -> tuple[ServeStandIn, str]:
    install_gateway_api(localkube)
    service = incremental_service(op.namespace, name, interval=interval)
    standin = await start_standin(service["spec"])
    await op.client.create(RAYSERVICE, service)
    ready = await op.wait_condition(name, "Ready", "True", timeout=120)
    await op.wait(lambda: _active(op, name), 30, "an active cluster")
    active = (await op.rayservice(name) or ready)["status"]["activeServiceStatus"]["rayClusterName"]
    return standin, active


async def test_traffic_and_capacity_move_in_steps_then_the_new_cluster_is_promoted(localkube):
    async with operator(localkube) as op, accept_gateway_objects(op, "inc"):
        standin, first = await _start(localkube, op, "inc")
        try:
            gateway = await op.get(GATEWAY, "inc-gateway")
            assert gateway is not None and gateway["spec"]["gatewayClassName"] == "istio"
            assert gateway["spec"]["listeners"] == [{"name": "http", "protocol": "HTTP", "port": 80}]
            assert gateway["metadata"]["ownerReferences"][0]["kind"] == "RayService"
            assert await op.wait(
                lambda: _weights_are(op, "inc", {f"{first}-serve-svc": 100}), 30, "the route"
            )
            per_cluster = await op.get(SERVICE, f"{first}-serve-svc")
            assert per_cluster is not None and per_cluster["metadata"]["ownerReferences"][0]["name"] == first

            await replace_spec(op, "inc", lambda obj: set_env(obj, "v2"))
            upgrading = await op.wait_condition("inc", "UpgradeInProgress", "True", timeout=30)
            second = upgrading["status"]["pendingServiceStatus"]["rayClusterName"]
            seen: list[int] = []

            async def promoted() -> bool:
                current = await weights(op, "inc")
                pending = current.get(f"{second}-serve-svc")
                if pending is not None and (not seen or seen[-1] != pending):
                    seen.append(pending)
                    assert sum(current.values()) == 100, current
                obj = await op.rayservice("inc")
                return ((obj or {}).get("status") or {}).get("activeServiceStatus", {}).get(
                    "rayClusterName"
                ) == second

            await op.wait(promoted, 120, "the new cluster promoted")
            # The pending weight only grew, by the step, never past the capacity Serve had been given.
            assert seen == sorted(seen) and set(seen) <= {0, 25, 50, 75, 100}, seen
            assert {25, 50, 75} <= set(seen), seen
            capacities = [c.get("target_capacity") for c in standin.configs if "target_capacity" in c]
            assert {50, 100, 0} <= set(capacities), capacities
            assert await op.wait(
                lambda: _weights_are(op, "inc", {f"{second}-serve-svc": 100}), 30, "the route"
            )
            await op.wait(lambda: _only(op, "inc", second), 60, "the old cluster deleted")
        finally:
            await standin.stop()


async def test_returning_to_the_active_spec_rolls_back_to_it(localkube):
    async with operator(localkube) as op, accept_gateway_objects(op, "back"):
        # Each step waits out the interval: with 10 s the upgrade is seconds at 25% and tens of seconds from
        # done when the spec is reverted (with 1 s it could finish first on a loaded machine: no rollback).
        standin, first = await _start(localkube, op, "back", interval=10)
        try:
            await replace_spec(op, "back", lambda obj: set_env(obj, "v2"))
            upgrading = await op.wait_condition("back", "UpgradeInProgress", "True", timeout=30)
            second = upgrading["status"]["pendingServiceStatus"]["rayClusterName"]
            await op.wait(lambda: _pending_weight_at_least(op, "back", second, 25), 60, "some traffic moved")

            await replace_spec(op, "back", _revert_quickly)
            rolling = await op.wait_condition("back", "RollbackInProgress", "True", timeout=30)
            rollback = next(c for c in rolling["status"]["conditions"] if c["type"] == "RollbackInProgress")
            assert (rollback["reason"], rollback["message"]) == (
                "DesiredClusterSpecChanged", "Goal state reverted to original cluster, rolling back.")  # fmt: skip
            done = await op.wait(
                lambda: _upgrade_message(op, "back", "Rollback complete"), 120, "rollback complete"
            )
            status = done["status"]
            assert status["activeServiceStatus"]["rayClusterName"] == first
            assert (
                status["activeServiceStatus"]["targetCapacity"],
                status["activeServiceStatus"]["trafficRoutedPercent"],
            ) == (100, 100)
            assert not status.get("pendingServiceStatus", {}).get("rayClusterName")
            assert not any(c["type"] == "RollbackInProgress" for c in status["conditions"])
            assert await op.wait(
                lambda: _weights_are(op, "back", {f"{first}-serve-svc": 100}), 30, "100 on the active"
            )
            await op.wait(lambda: _only(op, "back", first), 60, "the pending cluster deleted")
        finally:
            await standin.stop()


def _revert_quickly(obj: dict[str, Any]) -> None:
    _drop_env(obj)
    obj["spec"]["upgradeStrategy"]["clusterUpgradeOptions"]["intervalSeconds"] = 1


def _drop_env(obj: dict[str, Any]) -> None:
    """Back to the spec the active cluster was made from."""
    cluster = obj["spec"]["rayClusterConfig"]
    for template in [
        cluster["headGroupSpec"]["template"],
        *(g["template"] for g in cluster["workerGroupSpecs"]),
    ]:
        template["spec"]["containers"][0].pop("env")


async def _active(op: Operator, name: str) -> bool:
    obj = await op.rayservice(name)
    return bool(((obj or {}).get("status") or {}).get("activeServiceStatus", {}).get("rayClusterName"))


async def _weights_are(op: Operator, name: str, want: dict[str, int]) -> bool:
    return await weights(op, name) == want


async def _pending_weight_at_least(op: Operator, name: str, cluster: str, least: int) -> bool:
    return (await weights(op, name)).get(f"{cluster}-serve-svc", 0) >= least


async def _only(op: Operator, name: str, cluster: str) -> bool:
    return [c["metadata"]["name"] for c in await op.clusters(name)] == [cluster]


async def _upgrade_message(op: Operator, name: str, text: str) -> dict[str, Any] | None:
    obj = await op.rayservice(name)
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c["type"] == "UpgradeInProgress" and text in c.get("message", ""):
            return obj
    return None
