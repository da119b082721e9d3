from pathlib import Path
from typing import Any

from localkube.controllers.api import ControllerApi
from localkube.controllers.endpoints import EndpointsController
from localkube.server.rest import Resources
from localkube.storage import Event, Store
from support.eventually import eventually


def _pod(cluster: Resources, name: str, app: str, fault: str | None = None) -> None:
    annotations = {"localkube.io/simulate": fault} if fault else {}
    container = {"name": "c", "image": "x", "ports": [{"name": "http", "containerPort": 8080}]}
    pod = {
        "metadata": {"name": name, "labels": {"app": app}, "annotations": annotations},
        "spec": {"containers": [container]},
    }
    cluster.create(cluster.registry.by_resource("", "pods"), "default", pod, {})


async def _until_endpoints(cluster: Resources, check: Any) -> dict[str, Any]:
    def matching() -> dict[str, Any] | None:
        endpoints = cluster.store.get("/registry/core/endpoints/default/web")
        return endpoints if endpoints is not None and check(endpoints) else None

    found: dict[str, Any] = await eventually(matching, timeout=10, every=0.05)
    return found


async def test_endpoints_follow_ready_pods_and_resolve_named_ports(cluster: Resources) -> None:
    service = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    cluster.create(cluster.registry.by_resource("", "services"), "default", service, {})
    _pod(cluster, "ready", "web")
    _pod(cluster, "starting", "web", fault="NeverReady")
    _pod(cluster, "other", "db")

    def both_seen(endpoints: dict[str, Any]) -> bool:
        subsets = endpoints.get("subsets") or [{}]
        return len(subsets[0].get("addresses", [])) == 1 and len(subsets[0].get("notReadyAddresses", [])) == 1

    endpoints = await _until_endpoints(cluster, both_seen)
    (subset,) = endpoints["subsets"]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP", "name": "http"}]
    assert subset["addresses"][0]["targetRef"]["name"] == "ready"
    assert subset["notReadyAddresses"][0]["targetRef"]["name"] == "starting"
    endpoint_slice = cluster.store.get("/registry/discovery.k8s.io/endpointslices/default/web-slice")
    assert endpoint_slice is not None
    assert endpoint_slice["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert sorted(e["conditions"]["ready"] for e in endpoint_slice["endpoints"]) == [False, True]
    cluster.delete(
        cluster.registry.by_resource("", "pods"), "default", "ready", {"gracePeriodSeconds": 0}, {}
    )
    await _until_endpoints(cluster, lambda e: "addresses" not in (e.get("subsets") or [{}])[0])


async def test_a_pod_relabelled_out_of_the_selector_leaves_the_endpoints(cluster: Resources) -> None:
    service = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web", "tier": "a"}, "ports": [{"port": 80}]},
    }
    cluster.create(cluster.registry.by_resource("", "services"), "default", service, {})
    pods = cluster.registry.by_resource("", "pods")
    pod = {
        "metadata": {"name": "p", "labels": {"app": "web", "tier": "a"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    cluster.create(pods, "default", pod, {})
    await _until_endpoints(cluster, lambda e: bool((e.get("subsets") or [{}])[0].get("addresses")))
    current = cluster.get(pods, "default", "p")
    current["metadata"]["labels"]["tier"] = "b"
    cluster.update(pods, "default", "p", current, None, {})
    await _until_endpoints(cluster, lambda e: not e.get("subsets"))


async def test_a_service_publishing_not_ready_addresses_lists_unready_pods_as_addresses(
    cluster: Resources,
) -> None:
    service = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "publishNotReadyAddresses": True},
    }
    cluster.create(cluster.registry.by_resource("", "services"), "default", service, {})
    _pod(cluster, "starting", "web", fault="NeverReady")
    endpoints = await _until_endpoints(
        cluster, lambda e: bool((e.get("subsets") or [{}])[0].get("addresses"))
    )
    assert "notReadyAddresses" not in endpoints["subsets"][0]


def test_a_pod_write_that_changes_nothing_an_endpoint_shows_rebuilds_no_service(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    controller = EndpointsController(store, ControllerApi(None))  # type: ignore[arg-type]  # observe writes nothing
    service = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    service_key = "/registry/core/services/default/web"
    assert list(controller.observe(Event("ADDED", service_key, 1, b"", service))) == [service_key]
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "default", "uid": "u", "labels": {"app": "web"}},
        "spec": {"nodeName": "n", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending"},
    }
    pod_key = "/registry/core/pods/default/p"

    def observed(revision: int, **status: Any) -> list[str]:
        changed = {**pod, "status": {**pod["status"], **status}}
        return list(controller.observe(Event("MODIFIED", pod_key, revision, b"", changed)))

    assert list(controller.observe(Event("ADDED", pod_key, 2, b"", pod))) == [service_key]
    assert observed(3, phase="Running", containerStatuses=[{"name": "c", "ready": False}]) == []
    assert observed(4, podIP="10.0.0.7") == [service_key]
    assert observed(5, podIP="10.0.0.7", phase="Succeeded") == []
    assert observed(6, podIP="10.0.0.7", conditions=[{"type": "Ready", "status": "True"}]) == [service_key]
