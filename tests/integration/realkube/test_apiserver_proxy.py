"""The APIServer's v2 proxy (`/apis/ray.io/v1/...`) in front of kube-apiserver, which gzips an answer over
128 KiB for a client that accepts gzip (localkube never compresses, so only the real control plane shows
it): a large list reaches the proxy's client as JSON it can read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from integration.apiserver.conftest import apiserver_kubeconfig
from support.apiserver_process import ApiServerProcess

pytestmark = pytest.mark.realkube

NAMESPACE = "proxy-gzip"
CLUSTERS = 40
# Each RayCluster carries this much annotation: the list of all of them is well over kube-apiserver's
# 128 KiB compression threshold.
NOTE = "x" * 8192


@pytest.fixture(scope="module")
def apiserver(realkube: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServerProcess]:
    directory = tmp_path_factory.mktemp("apiserver")
    kubeconfig = apiserver_kubeconfig(realkube, directory / "kubeconfig")
    process = ApiServerProcess(kubeconfig, directory / "apiserver.log").start()
    try:
        yield process
    finally:
        process.stop()


def _raycluster(name: str) -> dict[str, Any]:
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}  # fmt: skip
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": NAMESPACE, "annotations": {"note": NOTE}},
            "spec": {"headGroupSpec": head}}  # fmt: skip


def test_a_list_kube_apiserver_compresses_reaches_the_client_as_json(
    realkube: Any, apiserver: ApiServerProcess
) -> None:
    with realkube.client() as admin:
        admin.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
        try:
            for index in range(CLUSTERS):
                created = admin.post(
                    f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters", json=_raycluster(f"c{index}")
                )
                created.raise_for_status()
            direct = admin.get(
                f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters", headers={"Accept-Encoding": "gzip"}
            )
            # What the proxy meets: the real server compresses this list for a client that accepts gzip.
            assert direct.headers.get("content-encoding") == "gzip"
            with httpx.Client(base_url=apiserver.url, timeout=60) as http:
                listed = http.get(f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters")
            assert listed.status_code == 200, listed.text[:200]
            items = listed.json()["items"]
            assert sorted(item["metadata"]["name"] for item in items) == sorted(
                f"c{i}" for i in range(CLUSTERS)
            )
            assert {item["metadata"]["annotations"]["note"] for item in items} == {NOTE}
        finally:
            admin.delete(f"/api/v1/namespaces/{NAMESPACE}")
