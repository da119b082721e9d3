import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from localkube.controllers.api import ControllerApi
from localkube.controllers.endpoints import EndpointsController
from localkube.controllers.runner import Runner
from localkube.controllers.scheduler import Scheduler
from localkube.node.kubelet import NodeOptions, SimulatedKubelet
from localkube.server.registry import Registry
from localkube.server.rest import SYSTEM_NAMESPACES, Resources
from localkube.storage import Store


@pytest.fixture
async def resources(tmp_path: Path) -> AsyncIterator[Resources]:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    api = ControllerApi(resources)
    kubelet = SimulatedKubelet(store, NodeOptions())
    kubelet.register(lambda node: api.create("", "nodes", None, node))
    runner = Runner(store, [Scheduler(store), kubelet, EndpointsController(store, api)])
    await runner.start()
    yield resources
    await runner.stop()
    store.close()


def _pod(resources: Resources, name: str, app: str, fault: str | None = None) -> None:
    annotations = {"localkube.io/simulate": fault} if fault else {}
    container = {"name": "c", "image": "x", "ports": [{"name": "http", "containerPort": 8080}]}
    pod = {
        "metadata": {"name": name, "labels": {"app": app}, "annotations": annotations},
        "spec": {"containers": [container]},
    }
    resources.create(resources.registry.by_resource("", "pods"), "default", pod, {})


async def _until_endpoints(resources: Resources, check: Any) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            endpoints = resources.store.get("/registry/core/endpoints/default/web")
            if endpoints is not None and check(endpoints):
                return endpoints
            await asyncio.sleep(0.05)


async def test_endpoints_follow_ready_pods_and_resolve_named_ports(resources: Resources) -> None:
    service = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    resources.create(resources.registry.by_resource("", "services"), "default", service, {})
    _pod(resources, "ready", "web")
    _pod(resources, "starting", "web", fault="NeverReady")
    _pod(resources, "other", "db")

    def both_seen(endpoints: dict[str, Any]) -> bool:
        subsets = endpoints.get("subsets") or [{}]
        return len(subsets[0].get("addresses", [])) == 1 and len(subsets[0].get("notReadyAddresses", [])) == 1

    endpoints = await _until_endpoints(resources, both_seen)
    (subset,) = endpoints["subsets"]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP", "name": "http"}]
    assert subset["addresses"][0]["targetRef"]["name"] == "ready"
    assert subset["notReadyAddresses"][0]["targetRef"]["name"] == "starting"
    endpoint_slice = resources.store.get("/registry/discovery.k8s.io/endpointslices/default/web-slice")
    assert endpoint_slice is not None
    assert endpoint_slice["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert sorted(e["conditions"]["ready"] for e in endpoint_slice["endpoints"]) == [False, True]
    resources.delete(
        resources.registry.by_resource("", "pods"), "default", "ready", {"gracePeriodSeconds": 0}, {}
    )
    await _until_endpoints(resources, lambda e: "addresses" not in (e.get("subsets") or [{}])[0])
