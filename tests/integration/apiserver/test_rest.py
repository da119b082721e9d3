"""Every REST route of the v1 API against localkube and the operator: create, get, list (paged) and
delete through HTTP, the objects checked in Kubernetes, upstream's JSON conventions and error bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from kuberay.rayresources import RAYCLUSTER, RAYJOB, RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import CONFIG_MAP, Resource
from support.apiserver_process import ApiServerProcess
from support.eventually import eventually

pytestmark = pytest.mark.usefixtures("operator")


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
    with pytest.raises(errors.NotFoundError):
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
    malformed = await http.post(base, json={**template(namespace), "cpu": "two"})
    assert malformed.status_code == 400 and malformed.json()["code"] == 3
    assert "cpu" in malformed.json()["message"]  # the field that is wrong is named
    bad_unit = await http.post(base, json={**template(namespace), "memoryUnit": "GB"})
    assert bad_unit.status_code == 400
    assert bad_unit.json()["message"].startswith("computeTemplate.memoryUnit: 'GB' is not a quantity suffix")
    # Unknown fields are dropped, as grpc-gateway does.
    assert (await http.post(base, json={**template(namespace), "colour": "blue"})).status_code == 200
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
    with_volume = cluster(namespace, annotations={"team": "a"})
    with_volume["clusterSpec"]["headGroupSpec"]["volumes"] = [
        {"name": "logs", "mountPath": "/tmp/logs", "volumeType": "EMPTY_DIR", "storage": "1Gi"}]  # fmt: skip
    created = await http.post(base, json=with_volume)
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
    assert head["spec"]["volumes"] == [{"name": "logs", "emptyDir": {"sizeLimit": "1Gi"}}]
    assert container["volumeMounts"] == [{"name": "logs", "mountPath": "/tmp/logs"}]
    assert body["clusterSpec"]["headGroupSpec"]["volumes"][0]["volumeType"] == 5  # EMPTY_DIR, as a number

    last: list[dict[str, Any]] = [{}]

    async def probe() -> bool:
        # The operator's Events are written beside its status, not before it: ready may come first.
        last[0] = (await http.get(f"{base}/c1")).json()
        return last[0].get("clusterState") == "ready" and bool(last[0].get("events"))

    await eventually(
        probe, 90, lambda: f"clusterState {last[0].get('clusterState')!r}, events {last[0].get('events')}"
    )
    assert last[0]["serviceEndpoint"]["dashboard"]

    assert (await http.post(base, json=cluster(namespace, "c2"))).status_code == 200
    page = (await http.get(base, params={"limit": 1})).json()
    assert len(page["clusters"]) == 1 and page["continue"]
    rest = (await http.get(base, params={"limit": 1, "continue": page["continue"]})).json()
    assert {c["name"] for c in page["clusters"] + rest["clusters"]} == {"c1", "c2"}
    everywhere = (await http.get("/apis/v1/clusters")).json()["clusters"]
    assert {c["name"] for c in everywhere if c["namespace"] == namespace} == {"c1", "c2"}

    assert (await http.delete(f"{base}/c2")).json() == {}
    await eventually_gone(kube, RAYCLUSTER, "c2", namespace)


async def eventually_gone(kube: Client, resource: Resource, name: str, namespace: str) -> None:
    async def gone() -> bool:
        try:
            await kube.get(resource, name, namespace)
        except errors.NotFoundError:
            return True
        return False

    await eventually(gone, 60, lambda: f"{resource.kind} {name} still there")


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
    bad_volume = cluster(namespace)
    bad_volume["clusterSpec"]["headGroupSpec"]["volumes"] = [
        {"name": "e", "mountPath": "/e", "volumeType": "EPHEMERAL"}
    ]
    await http.post(f"/apis/v1/namespaces/{namespace}/compute_templates", json=template(namespace, "small"))
    refused = await http.post(base, json=bad_volume)
    assert refused.status_code == 400
    assert refused.json()["message"] == ("Failed to create a Ray cluster: Create Cluster failed.: "
                                         "storage for ephemeral volume is empty")  # fmt: skip
    await http.delete(f"/apis/v1/namespaces/{namespace}/compute_templates/small")
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


async def _small_template(http: httpx.AsyncClient, namespace: str) -> None:
    answer = await http.post(f"/apis/v1/namespaces/{namespace}/compute_templates", json=template(namespace))
    assert answer.status_code == 200, answer.text


async def test_jobs_create_get_list_paged_delete(
    http: httpx.AsyncClient, kube: Client, namespace: str
) -> None:
    await _small_template(http, namespace)
    base = f"/apis/v1/namespaces/{namespace}/jobs"
    job = {"name": "j1", "namespace": namespace, "user": "bob", "version": "2.46.0",
           "entrypoint": "python -c 'print(1)'", "runtimeEnv": "pip:\n  - requests\n",
           "metadata": {"owner": "bob"}, "shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 30,
           "clusterSpec": cluster(namespace)["clusterSpec"], "jobSubmitter": {"image": "rayproject/ray:2.46.0"},
           "entrypointNumCpus": 1.5, "activeDeadlineSeconds": 600}  # fmt: skip
    created = await http.post(base, json=job)
    assert created.status_code == 200, created.text
    assert created.json()["jobSubmitter"] == {"image": "rayproject/ray:2.46.0"}  # the defaults are not shown
    crd = await kube.get(RAYJOB, "j1", namespace)
    assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "kuberay-apiserver"
    assert crd["metadata"]["labels"]["ray.io/cluster-name"] == "j1"
    assert crd["metadata"]["annotations"] == {"owner": "bob"}
    spec = crd["spec"]
    assert spec["runtimeEnvYAML"] == "pip:\n  - requests\n" and spec["shutdownAfterJobFinishes"] is True
    assert spec["entrypointNumCpus"] == 1.5 and spec["activeDeadlineSeconds"] == 600
    submitter = spec["submitterPodTemplate"]["spec"]["containers"][0]
    assert submitter["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert spec["rayClusterSpec"]["rayVersion"] == "2.46.0"

    got = (await http.get(f"{base}/j1")).json()
    assert got["entrypoint"] == job["entrypoint"] and got["user"] == "bob"
    selector_job = {"name": "j2", "namespace": namespace, "user": "bob", "entrypoint": "echo hi",
                    "clusterSelector": {"ray.io/cluster": "c1"}}  # fmt: skip
    assert (await http.post(base, json=selector_job)).status_code == 200
    page = (await http.get(base, params={"limit": 1})).json()
    assert len(page["jobs"]) == 1 and page["continue"]
    rest = (await http.get(base, params={"limit": 1, "continue": page["continue"]})).json()
    assert {j["name"] for j in page["jobs"] + rest["jobs"]} == {"j1", "j2"}
    assert {
        j["name"] for j in (await http.get("/apis/v1/jobs")).json()["jobs"] if j["namespace"] == namespace
    } == {"j1", "j2"}

    no_spec = await http.post(base, json={"name": "j3", "namespace": namespace, "user": "bob"})
    assert no_spec.status_code == 400
    assert no_spec.json()["message"].startswith(
        "A ClusterSpec object is required. Please specify one.: Validate job request failed."
    )
    assert (await http.delete(f"{base}/j2")).json() == {}
    await eventually_gone(kube, RAYJOB, "j2", namespace)
    gone = await http.delete(f"{base}/j2")
    assert gone.status_code == 404 and gone.json()["message"].startswith("Job j2 not found: Get job failure")


SERVE_CONFIG = "applications:\n  - name: fruit\n    import_path: fruit.deployment_graph\n"


async def test_services_create_update_get_list_paged_delete(
    http: httpx.AsyncClient, kube: Client, namespace: str
) -> None:
    await _small_template(http, namespace)
    base = f"/apis/v1/namespaces/{namespace}/services"
    service = {"name": "s1", "namespace": namespace, "user": "carol", "version": "2.46.0",
               "serveConfigV2": SERVE_CONFIG, "clusterSpec": cluster(namespace)["clusterSpec"]}  # fmt: skip
    created = await http.post(base, json=service)
    assert created.status_code == 200, created.text
    crd = await kube.get(RAYSERVICE, "s1", namespace)
    assert crd["metadata"]["labels"] == {"ray.io/user": "carol", "app.kubernetes.io/name": "kuberay",
                                         "app.kubernetes.io/managed-by": "kuberay-apiserver"}  # fmt: skip
    assert "ray.io/creation-timestamp" in crd["metadata"]["annotations"]
    assert crd["spec"]["serveConfigV2"] == SERVE_CONFIG
    head_ports = {
        p.get("name")
        for p in crd["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0][
            "ports"
        ]
    }
    assert {"serve", "dashboard-agent"} <= head_ports

    service["clusterSpec"]["workerGroupSpec"][0]["replicas"] = 2
    updated = await http.put(f"{base}/s1", json=service)
    assert updated.status_code == 200, updated.text
    assert updated.json()["clusterSpec"]["workerGroupSpec"][0]["replicas"] == 2
    crd = await kube.get(RAYSERVICE, "s1", namespace)
    assert "ray.io/update-timestamp" in crd["metadata"]["annotations"]
    assert crd["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] == 2
    assert (await http.get(f"{base}/s1")).json()["serveConfigV2"] == SERVE_CONFIG

    assert (await http.post(base, json={**service, "name": "s2"})).status_code == 200
    page = (await http.get(base, params={"pageSize": 1})).json()
    assert len(page["services"]) == 1 and page["totalSize"] == 1 and page["nextPageToken"]
    rest = (await http.get(base, params={"pageSize": 1, "pageToken": page["nextPageToken"]})).json()
    assert {s["name"] for s in page["services"] + rest["services"]} == {"s1", "s2"}
    every = (await http.get("/apis/v1/services")).json()["services"]
    assert {s["name"] for s in every if s["namespace"] == namespace} == {"s1", "s2"}

    no_config = await http.post(base, json={**service, "name": "s3", "serveConfigV2": ""})
    assert no_config.status_code == 400
    assert (await http.delete(f"{base}/s2")).json() == {}
    await eventually_gone(kube, RAYSERVICE, "s2", namespace)


async def test_healthz_metrics_and_swagger(http: httpx.AsyncClient, namespace: str) -> None:
    assert (await http.get("/healthz")).status_code == 200
    await http.get(f"/apis/v1/namespaces/{namespace}/clusters")
    await http.get(f"/apis/v1/namespaces/{namespace}/clusters/none")
    metrics = (await http.get("/metrics")).text
    assert ('grpc_server_handled_total{grpc_code="OK",grpc_method="ListCluster",grpc_service="proto.ClusterService",'
            'grpc_type="unary"}') in metrics  # fmt: skip
    assert 'grpc_code="NotFound",grpc_method="GetCluster"' in metrics
    assert "grpc_server_handling_seconds_bucket" in metrics

    merged = (await http.get("/swagger/kuberay_api.swagger.json")).json()
    assert merged["swagger"] == "2.0"
    assert "/apis/v1/namespaces/{namespace}/clusters" in merged["paths"]
    assert {t["name"] for t in merged["tags"]} >= {"ClusterService", "ComputeTemplateService", "RayJobService",
                                                    "RayServeService", "RayJobSubmissionService"}  # fmt: skip
    cluster_doc = (await http.get("/swagger/cluster.swagger.json")).json()
    assert cluster_doc["definitions"]["protoCluster"]["properties"]["clusterSpec"] == {
        "$ref": "#/definitions/protoClusterSpec"
    }
    assert (await http.get("/swagger/cluster.txt")).status_code == 404
    page = await http.get("/swagger-ui/")
    assert page.status_code == 200 and "swagger-ui-bundle.js" in page.text
    bundle = await http.get("/swagger-ui/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and len(bundle.content) > 100_000
