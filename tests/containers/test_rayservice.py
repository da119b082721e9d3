"""A RayService in containers (issue 47): Ray Serve answering through its serve Service's ClusterIP, which
kube-proxy forwards to the serving head, and a zero-downtime upgrade under a steady stream of requests
that loses none of them.

The application is tests/e2e/serveapps/kuberay_echo.py, in a ConfigMap mounted into the Ray containers and
found through PYTHONPATH, as a user ships code beside an image. The two clusters of an upgrade must fit the
node's two CPUs at once: each is a head alone, asking for half a CPU.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from containers.cluster import NEEDS_ROOT, Cluster
from support.upgrade_witness import UpgradeWitness

pytestmark = [NEEDS_ROOT, pytest.mark.containers, pytest.mark.slow, pytest.mark.timeout(900)]

ECHO = Path(__file__).resolve().parents[1] / "e2e" / "serveapps" / "kuberay_echo.py"
NAME = "echo"
APPS = "/home/ray/apps"


def _rayservice(tag: str, greeting: str = "hello") -> dict[str, Any]:
    app = {
        "name": "echo",
        "route_prefix": "/",
        "import_path": "kuberay_echo:app",
        "args": {"greeting": greeting},
    }
    head = {
        "name": "ray-head",
        "image": "rayproject/ray:2.52.0",
        "env": [{"name": "PYTHONPATH", "value": APPS}, {"name": "KUBERAY_ECHO_TAG", "value": tag}],
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}},
        "volumeMounts": [{"name": "apps", "mountPath": APPS}],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": NAME},
        "spec": {
            "serveConfigV2": yaml.safe_dump({"applications": [app]}),
            "rayClusterDeletionDelaySeconds": 5,
            "rayClusterConfig": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {
                    "rayStartParams": {"object-store-memory": "100000000"},
                    "template": {
                        "spec": {
                            "containers": [head],
                            "volumes": [{"name": "apps", "configMap": {"name": "echo-app"}}],
                        }
                    },
                },  # fmt: skip
                "workerGroupSpecs": [],
            },
        },
    }


@pytest.fixture
def namespace(cluster: Cluster, namespace: str) -> str:
    """The test's namespace (tests/containers/conftest.py) with the Serve application in a ConfigMap."""
    cluster.kubectl("create", "configmap", "echo-app", "-n", namespace, f"--from-file={ECHO}")
    return namespace


def _apply(cluster: Cluster, namespace: str, obj: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def _status(cluster: Cluster, namespace: str) -> dict[str, Any]:
    status: dict[str, Any] = cluster.get("rayservice", NAME, namespace).get("status", {})
    return status


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_serve_answers_through_kube_proxy_and_an_upgrade_loses_no_request(
    cluster: Cluster, operator: None, namespace: str
) -> None:
    _apply(cluster, namespace, _rayservice("v1"))
    cluster.wait_for(lambda: _condition(_status(cluster, namespace), "Ready").get("status") == "True",
                     "the RayService Ready")  # fmt: skip
    service = cluster.get("service", f"{NAME}-serve-svc", namespace)
    cluster_ip = service["spec"]["clusterIP"]
    url = f"http://{cluster_ip}:8000/"

    def answer() -> str | None:
        try:
            response = httpx.get(url, timeout=5)
        except httpx.HTTPError:
            return None
        return response.text if response.status_code == 200 else None

    assert (
        cluster.wait_for(answer, "an answer through the serve Service's ClusterIP", timeout=180) == "hello v1"
    )
    first = _status(cluster, namespace)["activeServiceStatus"]["rayClusterName"]

    witness = UpgradeWitness()
    stop = threading.Event()

    def send_requests() -> None:
        # A connection per request, as kube-proxy balances connections: a kept-alive one would stay on the
        # old pod until it is deleted, which no Service switch can avoid.
        with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
            while not stop.is_set():
                try:
                    witness.saw(client.get(url))
                except httpx.HTTPError as e:
                    witness.failed(e)
                stop.wait(0.2)

    sender = threading.Thread(target=send_requests, daemon=True)
    sender.start()
    try:
        _apply(cluster, namespace, _rayservice("v2"))

        def upgraded() -> bool:
            status = _status(cluster, namespace)
            active = status.get("activeServiceStatus", {}).get("rayClusterName")
            return bool(
                active
                and active != first
                and not status.get("pendingServiceStatus", {}).get("rayClusterName")
            )

        cluster.wait_for(upgraded, "the upgrade done: a new active cluster, none pending")
        cluster.wait_for(lambda: "hello v2" in witness.answers, "an answer from the new cluster", timeout=120)

        def old_cluster_gone() -> bool:
            return first not in {c["metadata"]["name"] for c in cluster.items("rayclusters", namespace)}

        cluster.wait_for(old_cluster_gone, "the old cluster deleted", timeout=180)
    finally:
        stop.set()
        sender.join(30)
    witness.assert_moved_once("hello v1", "hello v2")
