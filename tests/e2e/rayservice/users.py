"""A user's RayService on real Ray Serve, as the tests here drive it: its YAML (an echo application, found by
the containers on their PYTHONPATH as a user's code is found in their image; it answers with its greeting and
the KUBERAY_ECHO_TAG of its cluster, so a test can tell which cluster answered), `kubectl apply -f` of it for
each change, its status read with the kubeconfig's server, CA and token, and HTTP requests through
localkube's service proxy to `<name>-serve-svc`."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from support.eventually import eventually
from support.local_instance import LocalInstance

REPO = Path(__file__).resolve().parents[3]
SERVE_APPS = REPO / "tests" / "e2e" / "serveapps"


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
        found: dict[str, Any] = await eventually(
            lambda: self.condition(kind, **match),
            timeout,
            f"RayService {self.name}: {kind} {match}",
            every=0.5,
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
