"""The official `kubernetes` client and lightkube against localkube: CRUD, watch resume, 409 and 410."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import kubernetes
import pytest
from kubernetes.client.rest import ApiException
from lightkube import ApiError, Client, KubeConfig
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

from conformance.support import ROOT_CA
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

RayCluster = create_namespaced_resource("ray.io", "v1", "RayCluster", "rayclusters")


def _raycluster(name: str) -> dict[str, object]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}}},
    }


def _official(server: LocalKubeProcess) -> kubernetes.client.ApiClient:
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(server.kubeconfig), client_configuration=configuration)
    return kubernetes.client.ApiClient(configuration)


@pytest.fixture(scope="module")
def official(localkube: LocalKubeProcess) -> Iterator[kubernetes.client.ApiClient]:
    with _official(localkube) as client:
        yield client


@pytest.fixture(scope="module")
def light(localkube: LocalKubeProcess) -> Iterator[Client]:
    client = Client(KubeConfig.from_file(localkube.kubeconfig))
    yield client
    client.close()


def _compacting(factory: Callable[..., LocalKubeProcess]) -> tuple[LocalKubeProcess, str]:
    """A private localkube that compacts every 0.2 s keeping one revision, and a revision it has compacted."""
    server = factory(extra_args=["--compact-interval", "0.2", "--compact-keep", "1"])
    with server.client() as api:
        created = api.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "old"}}).json()
        for value in range(3):
            api.put(
                "/api/v1/namespaces/default/configmaps/old",
                json={
                    **created,
                    "data": {"v": str(value)},
                    "metadata": {**created["metadata"], "resourceVersion": None},
                },
            )

        def compacted() -> bool:
            with api.stream(
                "GET",
                "/api/v1/namespaces/default/configmaps",
                params={
                    "watch": "true",
                    "resourceVersion": created["metadata"]["resourceVersion"],
                    "timeoutSeconds": "1",
                },
            ) as events:
                return '"code":410' in next(events.iter_lines(), "")

        eventually(compacted, 10, "the store compacted")
    return server, created["metadata"]["resourceVersion"]


# -- the official client --------------------------------------------------------------------------------


def test_official_client_crud_and_stale_update(official: kubernetes.client.ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(official)
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    assert created.metadata.uid and created.metadata.resource_version
    created.data["a"] = "2"
    updated = core.replace_namespaced_config_map("c", namespace, created)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("c", namespace, created)
    assert stale.value.status == 409 and "the object has been modified" in stale.value.body
    core.patch_namespaced_config_map("c", namespace, {"data": {"b": "3"}})
    assert core.read_namespaced_config_map("c", namespace).data == {"a": "2", "b": "3"}
    core.delete_namespaced_config_map("c", namespace)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("c", namespace)
    assert missing.value.status == 404
    for name, tier in (("k1", "keep"), ("d1", "drop"), ("d2", "drop")):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": {"tier": tier}}})
    core.delete_collection_namespaced_config_map(namespace, label_selector="tier=drop")
    assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["k1", ROOT_CA]

    custom = kubernetes.client.CustomObjectsApi(official)
    custom.create_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", _raycluster("rc"))
    custom.patch_namespaced_custom_object_status(
        "ray.io", "v1", namespace, "rayclusters", "rc", {"status": {"state": "ready"}}
    )
    assert (
        custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", "rc")["status"]["state"]
        == "ready"
    )
    listed = custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["rc"]


def test_official_client_watch_resumes_from_a_resource_version(
    official: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(official)
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    for name in ("w1", "w2"):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    core.delete_namespaced_config_map("w1", namespace)
    watch = kubernetes.watch.Watch()
    seen = []
    for event in watch.stream(
        core.list_namespaced_config_map, namespace, resource_version=start, timeout_seconds=2
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 3:
            watch.stop()
    assert seen == [("ADDED", "w1"), ("ADDED", "w2"), ("DELETED", "w1")]


def test_official_client_gets_410_from_a_compacted_revision(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> None:
    server, compacted = _compacting(localkube_factory)
    with _official(server) as client:
        core = kubernetes.client.CoreV1Api(client)
        with pytest.raises(ApiException) as gone:
            for _ in kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=compacted, timeout_seconds=2
            ):
                pass
    assert gone.value.status == 410


# -- lightkube ------------------------------------------------------------------------------------------


def test_lightkube_crud_apply_and_stale_update(light: Client, namespace: str) -> None:
    created = light.create(ConfigMap(metadata=ObjectMeta(name="c"), data={"a": "1"}), namespace=namespace)
    light.patch(ConfigMap, "c", {"data": {"b": "2"}}, namespace=namespace, patch_type=PatchType.MERGE)
    with pytest.raises(ApiError) as stale:
        light.replace(created, namespace=namespace)
    assert stale.value.status.code == 409
    cluster = RayCluster.from_dict(_raycluster("rc"))
    light.apply(cluster, namespace=namespace, field_manager="lightkube")
    light.patch(
        RayCluster,
        "rc",
        [{"op": "add", "path": "/spec/suspend", "value": True}],
        namespace=namespace,
        patch_type=PatchType.JSON,
    )
    assert light.get(RayCluster, "rc", namespace=namespace)["spec"]["suspend"] is True
    assert [c.metadata.name for c in light.list(ConfigMap, namespace=namespace)] == ["c", ROOT_CA]
    light.delete(RayCluster, "rc", namespace=namespace)
    with pytest.raises(ApiError) as missing:
        light.get(RayCluster, "rc", namespace=namespace)
    assert missing.value.status.code == 404


def test_lightkube_watch_resumes_from_a_resource_version(light: Client, namespace: str) -> None:
    listing = light.list(ConfigMap, namespace=namespace)
    assert [c.metadata.name for c in listing] == [ROOT_CA]
    start = listing.resourceVersion
    light.create(ConfigMap(metadata=ObjectMeta(name="w1")), namespace=namespace)
    light.create(ConfigMap(metadata=ObjectMeta(name="w2")), namespace=namespace)
    seen = []
    for event_type, obj in light.watch(ConfigMap, namespace=namespace, resource_version=start):
        seen.append((event_type, obj.metadata.name))
        if len(seen) == 2:
            break
    assert seen == [("ADDED", "w1"), ("ADDED", "w2")]


def test_lightkube_gets_410_from_a_compacted_revision(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> None:
    server, compacted = _compacting(localkube_factory)
    client = Client(KubeConfig.from_file(server.kubeconfig))
    try:
        with pytest.raises(ApiError) as gone:
            for _ in client.watch(ConfigMap, namespace="default", resource_version=compacted):
                pass
        assert gone.value.status.code == 410
    finally:
        client.close()
