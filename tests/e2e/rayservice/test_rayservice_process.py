"""RayServices on real Ray Serve, through the user's path: `kuberay local up --node-mode process --port 0`
(the session's `local_process`), then `kubectl apply -f` of the RayService's YAML, edited and applied again
for each change, as a user does. Pods run as local processes (as root, each in its own network namespace),
so `ray start` and Ray Serve really run; the operator, on the host, reaches each dashboard and Serve proxy
through the API server's service and pod proxies. The test reads status with the kubeconfig's server,
CA and token, and sends HTTP requests through localkube's service proxy to `<name>-serve-svc`.

The bounded upgrade needs RAYSERVICE_UPGRADE_TIMEOUT_SECONDS in the operator's environment: a user exports
it before `kuberay local up`, so that test runs on a second instance started that way.

The Serve application (tests/e2e/serveapps/kuberay_echo.py) is found by the containers on their PYTHONPATH,
as a user's code is found in their image; it answers with its greeting and the KUBERAY_ECHO_TAG of its
cluster, so the test can tell which cluster answered.
"""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from local_instance import LocalInstance

REPO = Path(__file__).resolve().parents[3]
SERVE_APPS = REPO / "tests" / "e2e" / "serveapps"

pytestmark = [
    pytest.mark.slow,
    # Each test starts two or three real Ray clusters one after the other: minutes on a loaded machine.
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="several Ray clusters side by side need root (pod netns)"),
]


def serve_config(greeting: str = "hello", import_path: str = "kuberay_echo:app") -> str:
    app = {"name": "echo", "route_prefix": "/", "import_path": import_path, "args": {"greeting": greeting}}
    return yaml.safe_dump({"applications": [app]})


def container(name: str, tag: str, pythonpath: Path) -> dict[str, Any]:
    env = [{"name": "PYTHONPATH", "value": str(pythonpath)}, {"name": "KUBERAY_ECHO_TAG", "value": tag}]
    return {"name": name, "image": "rayproject/ray:2.60.0", "env": env}


def rayservice(name: str, *, tag: str = "v1", config: str | None = None) -> dict[str, Any]:
    head = {
        "rayStartParams": {"num-cpus": "1"},
        "template": {"spec": {"containers": [container("ray-head", tag, SERVE_APPS)]}},
    }
    worker = {"groupName": "small", "replicas": 0, "minReplicas": 0, "maxReplicas": 1, "rayStartParams": {},
              "template": {"spec": {"containers": [container("ray-worker", tag, SERVE_APPS)]}}}  # fmt: skip
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name},
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


def api_client(kubeconfig: str) -> httpx.AsyncClient:
    """An HTTP client for the API server the kubeconfig names, with its CA and its user's token."""
    config = yaml.safe_load(Path(kubeconfig).read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return httpx.AsyncClient(
        base_url=cluster["server"],
        headers={"Authorization": f"Bearer {user['token']}"},
        verify=ssl.create_default_context(cadata=ca),
        timeout=30,
    )


async def wait(probe: Callable[[], Awaitable[Any]], timeout: float, what: str) -> Any:
    """Polls `probe` until it returns something true and returns that; a bound, not a measurement."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := await probe()):
        assert asyncio.get_running_loop().time() < deadline, f"{what} not reached within {timeout} s"
        await asyncio.sleep(0.5)
    return value


class UsersService:
    """One RayService as its user handles it: a YAML file `kubectl apply`-ed (again after each edit), its
    status read from the API, and HTTP through localkube's service proxy to its serve Service."""

    def __init__(self, local: LocalInstance, namespace: str, directory: Path, obj: dict[str, Any]) -> None:
        self.local, self.namespace, self.obj = local, namespace, obj
        self.name: str = obj["metadata"]["name"]
        self.file = directory / f"{namespace}-{self.name}.yaml"
        self.kubeconfig = local.kubeconfig
        self.http = api_client(self.kubeconfig)
        self.path = f"/apis/ray.io/v1/namespaces/{namespace}/rayservices/{self.name}"
        self.serve_path = f"/api/v1/namespaces/{namespace}/services/{self.name}-serve-svc:serve/proxy/"

    async def apply(self, change: Callable[[dict[str, Any]], Any] = lambda obj: None) -> None:
        """Edits the YAML file and applies it with kubectl, in a subprocess this test's requests go on beside."""
        change(self.obj)
        self.file.write_text(yaml.safe_dump(self.obj))
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", self.kubeconfig, "apply", "-n", self.namespace, "-f", str(self.file),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        output, _ = await asyncio.wait_for(kubectl.communicate(), 120)
        assert kubectl.returncode == 0, output.decode()

    async def get(self) -> dict[str, Any]:
        response = await self.http.get(self.path)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    async def cluster_names(self) -> list[str]:
        response = await self.http.get(
            f"/apis/ray.io/v1/namespaces/{self.namespace}/rayclusters",
            params={"labelSelector": f"ray.io/originated-from-cr-name={self.name}"},
        )
        assert response.status_code == 200, response.text
        return sorted(c["metadata"]["name"] for c in response.json()["items"])

    async def condition(
        self, kind: str, *, status: str | None = None, reason: str | None = None, text: str = ""
    ) -> dict[str, Any] | None:
        """The RayService when its `kind` condition matches, else None."""
        obj = await self.get()
        for c in (obj.get("status") or {}).get("conditions") or ():
            if (
                c["type"] == kind
                and status in (None, c["status"])
                and reason in (None, c.get("reason"))
                and text in c.get("message", "")
            ):
                return obj
        return None

    async def wait_condition(self, kind: str, timeout: float, **match: str) -> dict[str, Any]:
        found: dict[str, Any] = await wait(
            lambda: self.condition(kind, **match), timeout, f"RayService {self.name}: {kind} {match}"
        )
        return found

    async def request(self) -> httpx.Response:
        return await self.http.get(self.serve_path)

    async def answer(self) -> str | None:
        try:
            response = await self.request()
        except httpx.HTTPError:
            return None
        return response.text if response.status_code == 200 else None

    async def answer_is(self, text: str) -> str | None:
        return text if await self.answer() == text else None

    async def clusters_are(self, names: list[str]) -> bool:
        return await self.cluster_names() == names


@pytest.fixture
async def user_service(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[UsersService]]]:
    """Makes a namespace on `local` and applies a RayService there; deletes the RayServices at the end (their
    Ray clusters' processes go with them) and closes the clients."""
    made: list[UsersService] = []

    async def make(local: LocalInstance, namespace: str, obj: dict[str, Any]) -> UsersService:
        local.namespace(namespace)
        service = UsersService(local, namespace, tmp_path, obj)
        made.append(service)
        await service.apply()
        return service

    yield make
    for service in made:
        service.local.kubectl("delete", "rayservice", service.name, "-n", service.namespace, "--wait=false")
        await service.http.aclose()


@pytest.fixture
def bounded_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalInstance]:
    """A second `kuberay local up --node-mode process --port 0`, with RAYSERVICE_UPGRADE_TIMEOUT_SECONDS
    exported before it, as a user sets the operator's environment. The bound leaves the new cluster time to
    start Ray and report its import error first, even with the suite's workers loading the machine."""
    with LocalInstance(
        tmp_path_factory.mktemp("local") / "bounded", "--node-mode", "process", "--port", "0",
        env={"RAYSERVICE_UPGRADE_TIMEOUT_SECONDS": "150"},
    ) as local:  # fmt: skip
        yield local


async def test_serve_upgrade_without_a_failed_request(
    local_process: LocalInstance, user_service: Callable[..., Awaitable[UsersService]]
) -> None:
    service = await user_service(local_process, "rayservice-upgrade", rayservice("echo"))
    ready = await service.wait_condition("Ready", 400, status="True")
    first = ready["status"]["activeServiceStatus"]["rayClusterName"]
    assert await wait(service.answer, 120, "an answer through the serve Service") == "hello v1"

    answers: list[str] = []
    failures: list[str] = []
    stop = asyncio.Event()

    async def send_requests() -> None:
        while not stop.is_set():
            try:
                response = await service.request()
            except httpx.HTTPError as e:
                failures.append(repr(e))
            else:
                if response.status_code == 200:
                    answers.append(response.text)
                else:
                    failures.append(f"{response.status_code} {response.text}")
            await asyncio.sleep(0.1)

    async def answered(text: str) -> bool:
        return text in answers

    sender = asyncio.create_task(send_requests())
    try:
        await service.apply(lambda obj: set_cluster_env(obj, "KUBERAY_ECHO_TAG", "v2"))
        upgrading = await service.wait_condition("UpgradeInProgress", 60, status="True")
        second = upgrading["status"]["pendingServiceStatus"]["rayClusterName"]
        assert second != first
        await service.wait_condition("UpgradeInProgress", 400, status="False", reason="NoPendingCluster")
        await wait(lambda: service.clusters_are([second]), 120, "the old cluster deleted")
        await wait(lambda: answered("hello v2"), 60, "an answer from the new cluster")
    finally:
        stop.set()
        await sender
    assert failures == [], failures[:5]
    assert answers[0] == "hello v1" and answers[-1] == "hello v2"
    # Once the new cluster answered, the old one never did again.
    assert "hello v1" not in answers[answers.index("hello v2") :]

    # A serve-config-only change updates the application in place: no new cluster.
    await service.apply(lambda obj: obj["spec"].update(serveConfigV2=serve_config("hi")))
    assert await wait(lambda: service.answer_is("hi v2"), 300, "the new greeting") == "hi v2"
    assert await service.cluster_names() == [second]
    updated = await service.get()
    assert not updated["status"].get("pendingServiceStatus", {}).get("rayClusterName")


async def test_an_import_error_and_a_bounded_upgrade_that_cannot_finish(
    bounded_local: LocalInstance, user_service: Callable[..., Awaitable[UsersService]]
) -> None:
    broken = serve_config(import_path="kuberay_no_such_module:app")
    service = await user_service(bounded_local, "rayservice-bounded", rayservice("fragile", config=broken))
    # Serve's own message for the failed import, in the Ready condition.
    obj = await service.wait_condition("Ready", 400, text="kuberay_no_such_module")
    ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "DEPLOY_FAILED" in ready["message"]

    await service.apply(lambda o: o["spec"].update(serveConfigV2=serve_config()))
    ready = await service.wait_condition("Ready", 300, status="True")
    first = ready["status"]["activeServiceStatus"]["rayClusterName"]
    assert await wait(service.answer, 120, "an answer") == "hello v1"
    # The new cluster cannot import the application (its PYTHONPATH misses the module): it never serves.
    await service.apply(lambda o: set_cluster_env(o, "PYTHONPATH", "/nonexistent"))
    stuck = await service.wait_condition("UpgradeInProgress", 400, text="kuberay_echo")
    pending = stuck["status"]["pendingServiceStatus"]["rayClusterName"]
    await service.wait_condition("UpgradeInProgress", 300, text="abandoned")
    await wait(lambda: service.clusters_are([first]), 120, f"{pending} deleted")
    assert await service.answer() == "hello v1"
    final = await service.get()
    assert final["status"]["activeServiceStatus"]["rayClusterName"] == first
