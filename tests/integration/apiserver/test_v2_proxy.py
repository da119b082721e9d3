"""apiserversdk's v2 proxy on the APIServer's HTTP port: KubeRay resources as Kubernetes serves them, the
compute-template middleware, Events about ray.io objects, and the kuberay-only service proxy."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import yaml

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.client import Client
from kuberay.runtime.resources import SERVICE
from support.apiserver_process import ApiServerProcess

from .test_rest import template


@pytest.fixture
async def http(apiserver: ApiServerProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=apiserver.url, timeout=60) as client:
        yield client


def manifest(namespace: str, name: str, head_template: str) -> dict[str, object]:
    def group(container: str) -> dict[str, object]:
        return {"template": {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.46.0"},
                                                     {"name": "sidecar", "image": "busybox"}]}}}  # fmt: skip

    worker = {"groupName": "w", "replicas": 1, "minReplicas": 0, "maxReplicas": 2, "rayStartParams": {},
              "computeTemplate": "gpu", **group("ray-worker")}  # fmt: skip
    head = {"rayStartParams": {}, "computeTemplate": head_template, **group("ray-head")}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name, "namespace": namespace},
            "spec": {"headGroupSpec": head, "workerGroupSpecs": [worker]}}  # fmt: skip


async def test_compute_template_middleware(http: httpx.AsyncClient, kube: Client, namespace: str) -> None:
    v1 = f"/apis/v1/namespaces/{namespace}/compute_templates"
    assert (await http.post(v1, json=template(namespace))).status_code == 200
    gpu = template(
        namespace, "gpu", gpu=1, tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    )
    assert (await http.post(v1, json=gpu)).status_code == 200
    base = f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters"
    body = yaml.safe_dump(manifest(namespace, "v2", "small"))
    created = await http.post(base, content=body, headers={"Content-Type": "application/yaml"})
    assert created.status_code == 201, created.text
    crd = await kube.get(RAYCLUSTER, "v2", namespace)
    head = crd["spec"]["headGroupSpec"]["template"]
    assert head["metadata"]["annotations"]["ray.io/compute-template"] == "small"
    assert [c["resources"]["limits"] for c in head["spec"]["containers"]] == [
        {"cpu": "2", "memory": "4Gi"}
    ] * 2
    worker = crd["spec"]["workerGroupSpecs"][0]["template"]
    # The middleware writes GPU counts as JSON numbers, as upstream's does.
    limits = [{k: str(v) for k, v in c["resources"]["limits"].items()} for c in worker["spec"]["containers"]]
    assert limits[0] == {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}  # the GPU on ray-worker only
    assert limits[1] == {"cpu": "2", "memory": "4Gi"}
    assert worker["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]

    listed = (await http.get(base, params={"limit": 1})).json()
    assert [c["metadata"]["name"] for c in listed["items"]] == ["v2"]
    missing = await http.post(base, json=manifest(namespace, "v3", "nope"))
    assert missing.status_code == 422
    assert missing.text.startswith(
        f"Cannot get compute template for name 'nope' in namespace '{namespace}', error: "
    )
    not_a_map = await http.post(base, content=b"hello", headers={"Content-Type": "text/plain"})
    assert (
        not_a_map.status_code == 400
        and not_a_map.text == "Failed to convert request body to Golang map object"
    )


async def test_events_and_service_proxy_rule(http: httpx.AsyncClient, kube: Client, namespace: str) -> None:
    events = await http.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    assert events.status_code == 200 and events.json()["kind"] == "EventList"
    await kube.create(SERVICE, {"metadata": {"name": "plain", "namespace": namespace},
                                "spec": {"ports": [{"name": "http", "port": 80}]}})  # fmt: skip
    refused = await http.get(f"/api/v1/namespaces/{namespace}/services/plain:http/proxy/")
    assert refused.status_code == 404 and refused.text == "kuberay service not found"
    bad = await http.get(f"/api/v1/namespaces/{namespace}/services/a:b:c:d/proxy/")
    assert bad.status_code == 400
