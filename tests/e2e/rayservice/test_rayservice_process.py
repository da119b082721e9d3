"""RayServices on real Ray Serve: localkube in process mode runs each RayCluster's pods as local processes
(as root, each in its own network namespace), so `ray start` and Ray Serve really run; the operator reaches
each dashboard and Serve proxy through the API server's service and pod proxies, and the test sends HTTP
requests through localkube's service proxy to `<name>-serve-svc`, as a user would.

The Serve application (tests/e2e/serveapps/kuberay_echo.py) is found by the containers on their PYTHONPATH,
as a user's code is found in their image; it answers with its greeting and the KUBERAY_ECHO_TAG of its
cluster, so the test can tell which cluster answered.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from integration.rayservice.harness import Operator, operator
from kuberay.controllers.rayservice.reconciler import RAYSERVICE
from localkube_process import LocalKubeProcess

REPO = Path(__file__).resolve().parents[3]
SERVE_APPS = REPO / "tests" / "e2e" / "serveapps"

pytestmark = [
    pytest.mark.slow,
    # Each test starts two or three real Ray clusters one after the other: minutes on a loaded machine.
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="several Ray clusters side by side need root (pod netns)"),
]


@pytest.fixture(scope="module")
def process_localkube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    server = LocalKubeProcess(
        tmp_path_factory.mktemp("localkube-process"), extra_args=["--node-mode", "process"]
    )
    server.start()
    try:
        server.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
        yield server
    finally:
        server.stop(timeout=60)


def serve_config(greeting: str = "hello", import_path: str = "kuberay_echo:app") -> str:
    app = {"name": "echo", "route_prefix": "/", "import_path": import_path, "args": {"greeting": greeting}}
    return yaml.safe_dump({"applications": [app]})


def container(name: str, tag: str, pythonpath: Path) -> dict[str, Any]:
    env = [{"name": "PYTHONPATH", "value": str(pythonpath)}, {"name": "KUBERAY_ECHO_TAG", "value": tag}]
    return {"name": name, "image": "rayproject/ray:2.60.0", "env": env}


def rayservice(namespace: str, name: str, *, tag: str = "v1", config: str | None = None) -> dict[str, Any]:
    head = {
        "rayStartParams": {"num-cpus": "1"},
        "template": {"spec": {"containers": [container("ray-head", tag, SERVE_APPS)]}},
    }
    worker = {"groupName": "small", "replicas": 0, "minReplicas": 0, "maxReplicas": 1, "rayStartParams": {},
              "template": {"spec": {"containers": [container("ray-worker", tag, SERVE_APPS)]}}}  # fmt: skip
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "serveConfigV2": config or serve_config(),
            "rayClusterDeletionDelaySeconds": 5,
            "rayClusterConfig": {"rayVersion": "2.60.0", "headGroupSpec": head, "workerGroupSpecs": [worker]},
        },
    }


def set_cluster_env(obj: dict[str, Any], name: str, value: str) -> None:
    cluster = obj["spec"]["rayClusterConfig"]
    for template in [
        cluster["headGroupSpec"]["template"],
        *(g["template"] for g in cluster["workerGroupSpecs"]),
    ]:
        for variable in template["spec"]["containers"][0]["env"]:
            if variable["name"] == name:
                variable["value"] = value


class ServeClient:
    """HTTP through localkube's service proxy to the RayService's serve Service."""

    def __init__(self, localkube: LocalKubeProcess, namespace: str, name: str) -> None:
        self.http = httpx.AsyncClient(
            base_url=localkube.url,
            headers={"Authorization": f"Bearer {localkube.token}"},
            verify=localkube.ssl_context(),
            timeout=30,
        )
        self.path = f"/api/v1/namespaces/{namespace}/services/{name}-serve-svc:serve/proxy/"

    async def get(self) -> httpx.Response:
        return await self.http.get(self.path)

    async def answer(self) -> str | None:
        try:
            response = await self.get()
        except httpx.HTTPError:
            return None
        return response.text if response.status_code == 200 else None

    async def close(self) -> None:
        await self.http.aclose()


async def update(op: Operator, name: str, change: Any) -> None:
    obj = await op.rayservice(name)
    assert obj is not None
    change(obj)
    await op.client.update(RAYSERVICE, obj)


async def cluster_names(op: Operator, name: str) -> list[str]:
    return sorted(c["metadata"]["name"] for c in await op.clusters(name))


async def test_serve_upgrade_without_a_failed_request(process_localkube):
    async with operator(process_localkube) as op:
        await op.client.create(RAYSERVICE, rayservice(op.namespace, "echo"))
        ready = await op.wait_condition("echo", "Ready", "True", timeout=400)
        first = ready["status"]["activeServiceStatus"]["rayClusterName"]
        client = ServeClient(process_localkube, op.namespace, "echo")
        try:
            assert await op.wait(client.answer, 120, "an answer through the serve Service") == "hello v1"

            answers: list[str] = []
            failures: list[str] = []
            stop = asyncio.Event()

            async def send_requests() -> None:
                while not stop.is_set():
                    try:
                        response = await client.get()
                    except httpx.HTTPError as e:
                        failures.append(repr(e))
                    else:
                        if response.status_code == 200:
                            answers.append(response.text)
                        else:
                            failures.append(f"{response.status_code} {response.text}")
                    await asyncio.sleep(0.1)

            sender = asyncio.create_task(send_requests())
            try:
                await update(op, "echo", lambda obj: set_cluster_env(obj, "KUBERAY_ECHO_TAG", "v2"))
                upgrading = await op.wait_condition("echo", "UpgradeInProgress", "True", timeout=60)
                second = upgrading["status"]["pendingServiceStatus"]["rayClusterName"]
                assert second != first
                await op.wait_condition(
                    "echo", "UpgradeInProgress", "False", reason="NoPendingCluster", timeout=400
                )
                await op.wait(
                    lambda: _is(cluster_names(op, "echo"), [second]), 120, "the old cluster deleted"
                )
                await op.wait(lambda: _async("hello v2" in answers), 60, "an answer from the new cluster")
            finally:
                stop.set()
                await sender
            assert failures == [], failures[:5]
            assert answers[0] == "hello v1" and answers[-1] == "hello v2"
            # Once the new cluster answered, the old one never did again.
            assert "hello v1" not in answers[answers.index("hello v2") :]

            # A serve-config-only change updates the application in place: no new cluster.
            await update(op, "echo", lambda obj: obj["spec"].update(serveConfigV2=serve_config("hi")))
            assert await op.wait(lambda: _answer_is(client, "hi v2"), 300, "the new greeting") == "hi v2"
            assert await cluster_names(op, "echo") == [second]
            updated = await op.rayservice("echo")
            assert updated is not None and not updated["status"].get("pendingServiceStatus", {}).get(
                "rayClusterName"
            )
        finally:
            await client.close()


async def _async(value: Any) -> Any:
    return value


async def _is(names: Any, want: list[str]) -> bool:
    return bool(await names == want)


async def _answer_is(client: ServeClient, text: str) -> str | None:
    answer = await client.answer()
    return answer if answer == text else None


async def test_an_import_error_and_a_bounded_upgrade_that_cannot_finish(process_localkube):
    environ = {"RAYSERVICE_UPGRADE_TIMEOUT_SECONDS": "90"}
    async with operator(process_localkube, environ=environ) as op:
        broken = serve_config(import_path="kuberay_no_such_module:app")
        await op.client.create(RAYSERVICE, rayservice(op.namespace, "fragile", config=broken))
        # Serve's own message for the failed import, in the Ready condition.
        obj = await op.wait(
            lambda: _condition_has(op, "fragile", "Ready", "kuberay_no_such_module"), 400, "Serve's why"
        )
        ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "False" and "DEPLOY_FAILED" in ready["message"]

        await update(op, "fragile", lambda o: o["spec"].update(serveConfigV2=serve_config()))
        ready = await op.wait_condition("fragile", "Ready", "True", timeout=300)
        first = ready["status"]["activeServiceStatus"]["rayClusterName"]
        client = ServeClient(process_localkube, op.namespace, "fragile")
        try:
            assert await op.wait(client.answer, 120, "an answer") == "hello v1"
            # The new cluster cannot import the application (its PYTHONPATH misses the module): it never serves.
            await update(op, "fragile", lambda o: set_cluster_env(o, "PYTHONPATH", "/nonexistent"))
            stuck = await op.wait(
                lambda: _condition_has(op, "fragile", "UpgradeInProgress", "kuberay_echo"), 400, "the why"
            )
            pending = stuck["status"]["pendingServiceStatus"]["rayClusterName"]
            await op.wait(
                lambda: _condition_has(op, "fragile", "UpgradeInProgress", "abandoned"), 300, "abandoned"
            )
            await op.wait(lambda: _is(cluster_names(op, "fragile"), [first]), 120, f"{pending} deleted")
            assert await client.answer() == "hello v1"
            final = await op.rayservice("fragile")
            assert final is not None and final["status"]["activeServiceStatus"]["rayClusterName"] == first
        finally:
            await client.close()


async def _condition_has(op: Operator, name: str, kind: str, text: str) -> dict[str, Any] | None:
    obj = await op.rayservice(name)
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c["type"] == kind and text in c.get("message", ""):
            return obj
    return None
