"""RayServices on real Ray Serve, through the user's path: `kuberay local up --node-mode process --port 0`
(the session's `local_process`), then `kubectl apply -f` of the RayService's YAML, edited and applied again
for each change, as a user does. Pods run as local processes (as root, each in its own network namespace),
so `ray start` and Ray Serve really run; the operator, on the host, reaches each dashboard and Serve proxy
through the API server's service and pod proxies (see users.py for the application and the requests).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

import httpx
import pytest

from e2e.rayservice.users import UsersService, rayservice, serve_config, set_cluster_env
from integration.kubectl import tables
from support.eventually import eventually
from support.local_instance import LocalInstance
from support.upgrade_witness import UpgradeWitness

pytestmark = [
    pytest.mark.slow,
    # Each test starts two or three real Ray clusters one after the other: minutes on a loaded machine.
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="several Ray clusters side by side need root (pod netns)"),
]


async def test_serve_upgrade_without_a_failed_request(
    local_process: LocalInstance, user_service: Callable[..., Awaitable[UsersService]]
) -> None:
    service = await user_service(local_process, "rayservice-upgrade", rayservice("echo"))
    ready = await service.wait_condition("Ready", 400, status="True")
    first = ready["status"]["activeServiceStatus"]["rayClusterName"]
    assert (
        await eventually(service.answer, 120, "an answer through the serve Service", every=0.5) == "hello v1"
    )
    [row] = tables.parse(
        local_process.kubectl("ray", "get", "service", service.name, "-n", service.namespace)
    )
    assert (row["SERVICE STATUS"], row["ACTIVE CLUSTER"], row["PENDING CLUSTER"]) == ("Running", first, "")
    assert row["READY APPLICATIONS"] == "1/1"

    witness = UpgradeWitness()
    stop = asyncio.Event()

    async def send_requests() -> None:
        while not stop.is_set():
            try:
                witness.saw(await service.request())
            except httpx.HTTPError as e:
                witness.failed(e)
            await asyncio.sleep(0.1)

    async def answered(text: str) -> bool:
        return text in witness.answers

    sender = asyncio.create_task(send_requests())
    try:
        await service.apply(lambda obj: set_cluster_env(obj, "KUBERAY_ECHO_TAG", "v2"))
        upgrading = await service.wait_condition("UpgradeInProgress", 60, status="True")
        second = upgrading["status"]["pendingServiceStatus"]["rayClusterName"]
        assert second != first
        listed = local_process.kubectl("ray", "get", "rayservices", "-n", service.namespace)
        assert {(r["ACTIVE CLUSTER"], r["PENDING CLUSTER"]) for r in tables.parse(listed)} == {
            (first, second)
        }
        await service.wait_condition("UpgradeInProgress", 400, status="False", reason="NoPendingCluster")
        await eventually(lambda: service.clusters_are([second]), 120, "the old cluster deleted", every=0.5)
        await eventually(lambda: answered("hello v2"), 60, "an answer from the new cluster", every=0.5)
    finally:
        stop.set()
        await sender
    witness.assert_moved_once("hello v1", "hello v2")

    # A serve-config-only change updates the application in place: no new cluster.
    await service.apply(lambda obj: obj["spec"].update(serveConfigV2=serve_config("hi")))
    assert await eventually(lambda: service.answer_is("hi v2"), 300, "the new greeting", every=0.5) == "hi v2"
    assert await service.cluster_names() == [second]
    updated = await service.get()
    assert not updated["status"].get("pendingServiceStatus", {}).get("rayClusterName")
