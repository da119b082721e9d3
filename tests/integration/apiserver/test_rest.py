"""Every REST route of the v1 API against localkube and the operator: create, get, list (paged) and
delete through HTTP, the objects checked in Kubernetes, upstream's JSON conventions and error bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from apiserver_process import ApiServerProcess
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import CONFIG_MAP, Resource

RAYCLUSTER = Resource("ray.io/v1", "RayCluster", "rayclusters")
RAYJOB = Resource("ray.io/v1", "RayJob", "rayjobs")
RAYSERVICE = Resource("ray.io/v1", "RayService", "rayservices")


@pytest.fixture
async def http(apiserver: ApiServerProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=apiserver.url, timeout=60) as client:
        yield client


def template(namespace: str, name: str = "small", **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "cpu": 2, "memory": 4, **extra}


def cluster(namespace: str, name: str = "c1", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "user": "alice",
        "version": "2.46.0",
        "environment": "PRODUCTION",
        "clusterSpec": {
            "headGroupSpec": {"computeTemplate": "small", "rayStartParams": {"dashboard-host": "0.0.0.0"}},
            "workerGroupSpec": [
                {
                    "groupName": "workers",
                    "computeTemplate": "small",
                    "replicas": 1,
                    "maxReplicas": 3,
                    "rayStartParams": {},
                }
            ],  # fmt: skip
        },
        **extra,
    }


async def test_compute_templates_create_get_list_paged_delete(
    http: httpx.AsyncClient, kube: Client, namespace: str
) -> None:
    base = f"/apis/v1/namespaces/{namespace}/compute_templates"
    tolerations = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    created = await http.post(base, json=template(namespace, gpu=1, tolerations=tolerations,
                                                  extendedResources={"vpc.amazonaws.com/efa": 2}))  # fmt: skip
    assert created.status_code == 200, created.text
    assert created.json()["extendedResources"] == {"vpc.amazonaws.com/efa": 2}
    stored = await kube.get(CONFIG_MAP, "small", namespace)
    assert stored["metadata"]["labels"] == {
        "ray.io/config-type": "compute-template",
        "ray.io/compute-template": "small",
    }
    assert stored["data"]["memory_unit"] == "Gi" and stored["data"]["cpu"] == "2"
    assert stored["data"]["extended_resources"] == '{"vpc.amazonaws.com/efa":2}'

    got = await http.get(f"{base}/small")
    assert got.status_code == 200
    assert got.json()["tolerations"] == tolerations and got.json()["memoryUnit"] == "Gi"

    for name in ("medium", "large"):
        assert (await http.post(base, json=template(namespace, name))).status_code == 200
    first = (await http.get(base, params={"limit": 2})).json()
    assert len(first["computeTemplates"]) == 2 and first["continue"]
    second = (await http.get(base, params={"limit": 2, "continue": first["continue"]})).json()
    names = {t["name"] for t in first["computeTemplates"] + second["computeTemplates"]}
    assert names == {"small", "medium", "large"} and "continue" not in second
    everywhere = (await http.get("/apis/v1/compute_templates")).json()["computeTemplates"]
    assert {t["name"] for t in everywhere if t["namespace"] == namespace} == names

    assert (await http.delete(f"{base}/medium")).json() == {}
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIG_MAP, "medium", namespace)


async def test_compute_template_errors_are_upstreams(http: httpx.AsyncClient, namespace: str) -> None:
    base = f"/apis/v1/namespaces/{namespace}/compute_templates"
    zero_cpu = await http.post(base, json={"name": "t", "namespace": namespace, "memory": 1})
    assert zero_cpu.status_code == 400
    assert zero_cpu.json() == {
        "code": 3,
        "message": "Cpu amount is zero. Please specify a valid value.: Validate compute template runtime request "
        "failed.: Invalid input error: Cpu amount is zero. Please specify a valid value.",
        "details": [],
    }
    assert (await http.post(base, json=template(namespace))).status_code == 200
    again = await http.post(base, json=template(namespace))
    assert again.status_code == 409 and again.json()["code"] == 6
    assert again.json()["message"].startswith(
        f"Compute template with name small already exists in namespace {namespace}"
    )
    missing = await http.get(f"{base}/nope")
    assert missing.status_code == 404 and missing.json()["code"] == 5
    assert missing.json()["message"].startswith(
        "Compute template nope not found: Get compute template failed."
    )
    wrong_namespace = await http.post(base, json=template("elsewhere"))
    assert wrong_namespace.status_code == 400
    assert "different from the namespace defined in the compute template" in wrong_namespace.json()["message"]


async def test_cluster_create_get_list_paged_delete_and_ready(
    http: httpx.AsyncClient, kube: Client, namespace: str
) -> None:
    assert (
        await http.post(f"/apis/v1/namespaces/{namespace}/compute_templates", json=template(namespace))
    ).status_code == 200
    base = f"/apis/v1/namespaces/{namespace}/clusters"
    created = await http.post(base, json=cluster(namespace, annotations={"team": "a"}))
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["environment"] == 3  # enums as numbers
    assert body["clusterSpec"]["headGroupSpec"]["computeTemplate"] == "small"
    assert body["clusterSpec"]["workerGroupSpec"][0]["minReplicas"] == 1  # defaults to replicas

    crd = await kube.get(RAYCLUSTER, "c1", namespace)
    assert crd["metadata"]["labels"] == {
        "ray.io/cluster-name": "c1", "ray.io/user": "alice", "ray.io/version": "2.46.0",
        "ray.io/environment": "PRODUCTION", "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/managed-by": "kuberay-apiserver",
    }  # fmt: skip
    assert crd["metadata"]["annotations"]["team"] == "a"
    assert "ray.io/creation-timestamp" in crd["metadata"]["annotations"]
    head = crd["spec"]["headGroupSpec"]["template"]
    assert head["metadata"]["annotations"]["ray.io/compute-template"] == "small"
    container = head["spec"]["containers"][0]
    assert container["name"] == "ray-head" and container["image"] == "rayproject/ray:2.46.0"
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "4Gi"}
    assert container["resources"]["requests"] == container["resources"]["limits"]

    async def state() -> str:
        return str((await http.get(f"{base}/c1")).json().get("clusterState", ""))

    last = [""]

    async def probe() -> bool:
        last[0] = await state()
        return last[0] == "ready"

    await _until(probe, 90, lambda: f"clusterState {last[0]!r}")
    got = (await http.get(f"{base}/c1")).json()
    assert got["serviceEndpoint"]["dashboard"] and got["events"]

    assert (await http.post(base, json=cluster(namespace, "c2"))).status_code == 200
    page = (await http.get(base, params={"limit": 1})).json()
    assert len(page["clusters"]) == 1 and page["continue"]
    rest = (await http.get(base, params={"limit": 1, "continue": page["continue"]})).json()
    assert {c["name"] for c in page["clusters"] + rest["clusters"]} == {"c1", "c2"}
    everywhere = (await http.get("/apis/v1/clusters")).json()["clusters"]
    assert {c["name"] for c in everywhere if c["namespace"] == namespace} == {"c1", "c2"}

    assert (await http.delete(f"{base}/c2")).json() == {}
    await eventually_gone(kube, RAYCLUSTER, "c2", namespace)


async def _until(probe: Any, timeout: float, why: Any) -> None:
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout
    while not await probe():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {timeout}s: {why()}")
        await asyncio.sleep(0.5)


async def eventually_gone(kube: Client, resource: Resource, name: str, namespace: str) -> None:
    async def gone() -> bool:
        try:
            await kube.get(resource, name, namespace)
        except errors.NotFound:
            return True
        return False

    await _until(gone, 60, lambda: f"{resource.kind} {name} still there")


async def test_cluster_errors_are_upstreams(http: httpx.AsyncClient, kube: Client, namespace: str) -> None:
    base = f"/apis/v1/namespaces/{namespace}/clusters"
    no_user = await http.post(base, json=cluster(namespace, user=""))
    assert no_user.status_code == 400
    assert no_user.json()["message"].startswith(
        "User who create the cluster is empty. Please specify a valid value.: Validate create cluster request failed."
    )
    no_max = cluster(namespace)
    no_max["clusterSpec"]["workerGroupSpec"][0]["maxReplicas"] = 0
    no_max["clusterSpec"]["workerGroupSpec"][0]["replicas"] = 0
    answer = await http.post(base, json=no_max)
    assert answer.status_code == 400
    assert answer.json()["message"].startswith(
        "WorkerNodeSpec 0 MaxReplicas can not be 0. Please specify a valid value."
    )
    no_template = await http.post(base, json=cluster(namespace))
    assert no_template.status_code == 500 and no_template.json()["code"] == 13
    assert no_template.json()["message"].startswith("Internal Server Error: Create Cluster failed.: InternalServerError: "
                                                    f"Failed to populate compute template for ({namespace}/c1)")  # fmt: skip
    assert "Cannot get compute template for name 'small'" in no_template.json()["message"]
    missing = await http.get(f"{base}/nope")
    assert missing.status_code == 404 and missing.json()["message"].startswith("Cluster nope not found")
    await kube.create(RAYCLUSTER, {"metadata": {"name": "byhand", "namespace": namespace},
                                   "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                                       {"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}}}})  # fmt: skip
    foreign = await http.get(f"{base}/byhand")
    assert foreign.status_code == 500 and foreign.json()["code"] == 2
    assert (
        foreign.json()["message"]
        == "RayCluster with name byhand not managed by kuberay-apiserver: Get cluster failed."
    )
    listed = (await http.get(base)).json()
    assert "clusters" not in listed  # the unmanaged one is not listed
    unrouted = await http.get("/apis/v1/nothing-here")
    assert unrouted.status_code == 404 and unrouted.json()["code"] == 5
