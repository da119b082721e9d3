"""The operator in this process (RayCluster and RayService controllers) against a localkube in simulate mode,
and a stand-in for the Ray head that simulated pods do not run.

`ServeStandIn` is a fake, and says so: simulated pods run no processes, so nothing would answer the
dashboard's Serve API or the Serve proxy's health check. It listens on an address the test pins the
simulated head pod to (`localkube.io/pod-ip`), on the head's dashboard and serve ports; the operator
reaches it as it reaches a real head, through the API server's service and pod proxies
(`--use-kubernetes-proxy`). It keeps the last declarative config `PUT` to it and reports each of its
applications RUNNING (or, for an import path listed in `failing`, DEPLOY_FAILED with a message, as Serve
does). The real Ray Serve path is covered end to end in tests/e2e/rayservice.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from prometheus_client import CollectorRegistry

from integration.inprocess import running_operator
from kuberay.api.features import FeatureGates
from kuberay.controllers.rayservice import setup as rayservice_setup
from kuberay.controllers.rayservice.reconciler import RayServiceReconciler
from kuberay.rayresources import RAYCLUSTER, RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.events import EVENTS_V1, EventRecorder
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import Resource
from support.eventually import eventually

# Loopback addresses for stand-ins (simulated pods get 127.244.0.0/16); each is taken at most once here.
_addresses = (f"127.251.{a}.{b}" for a in range(1, 255) for b in range(1, 255))


@dataclass
class ServeStandIn:
    address: str
    ports: tuple[int, ...]
    failing: dict[str, str] = field(default_factory=dict)  # import_path -> Serve's message
    configs: list[dict[str, Any]] = field(default_factory=list)
    _server: uvicorn.Server | None = None
    _task: asyncio.Task[None] | None = None

    def applications(self) -> dict[str, Any]:
        if not self.configs:
            return {}
        apps: dict[str, Any] = {}
        for app in self.configs[-1].get("applications") or ():
            failure = self.failing.get(app.get("import_path", ""))
            deployments = {
                d["name"]: {"name": d["name"], "status": "UNHEALTHY" if failure else "HEALTHY", "message": ""}
                for d in app.get("deployments") or [{"name": "Deployment"}]
            }
            apps[app.get("name", "default")] = {
                "name": app.get("name", "default"),
                "status": "DEPLOY_FAILED" if failure else "RUNNING",
                "message": failure or "",
                "route_prefix": app.get("route_prefix", "/"),
                "deployments": deployments,
            }
        return apps

    async def _app(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, answer = 404, b"not found"
        path, method = scope["path"], scope["method"]
        if path == "/api/serve/applications/" and method == "GET":
            status, answer = 200, json.dumps({"applications": self.applications()}).encode()
        elif path == "/api/serve/applications/" and method == "PUT":
            self.configs.append(json.loads(body))
            status, answer = 200, b""
        elif path == "/-/healthz":
            status, answer = 200, b"success"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer})

    async def start(self) -> None:
        sockets: list[socket.socket] = []
        try:
            for port in self.ports:
                sockets.append(sock := socket.socket())
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((self.address, port))
                # Listening now: with SO_REUSEADDR two unlistening binds of one port both succeed.
                sock.listen()
        except OSError:
            for sock in sockets:
                sock.close()
            raise
        config = uvicorn.Config(self._app, log_level="warning", lifespan="off", interface="asgi3")
        server = self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(server.serve(sockets=sockets))
        await eventually(lambda: server.started, 30, "the fake dashboard serving", every=0.02)

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._task, 10)


async def start_standin(spec: dict[str, Any], failing: dict[str, str] | None = None) -> ServeStandIn:
    """A started stand-in for the head of a RayService's cluster `spec`, which is pinned to its address: the
    first one in 127.251.0.0/16 whose ports are free (other pytest-xdist workers, and other test runs on
    the machine, take addresses from the same range)."""
    for address in _addresses:
        standin = ServeStandIn(address, pin_head(spec, address), failing=failing or {})
        try:
            await standin.start()
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
        else:
            return standin
    raise RuntimeError("every stand-in address of 127.251.0.0/16 is taken")


def pin_head(spec: dict[str, Any], address: str) -> tuple[int, ...]:
    """Pins the head pod of a RayService's cluster spec to `address`; returns its dashboard and serve ports."""
    template = spec["rayClusterConfig"]["headGroupSpec"].setdefault("template", {})
    template.setdefault("metadata", {}).setdefault("annotations", {})["localkube.io/pod-ip"] = address
    ports = {p.get("name"): p["containerPort"] for p in template["spec"]["containers"][0].get("ports") or ()}
    if not ports:
        ports = {"dashboard": 8265, "serve": 8000}
    return (ports.get("dashboard", 8265), ports.get("serve", 8000))


@dataclass
class Operator:
    client: Client
    namespaces: list[str]
    manager: Manager
    reconciler: RayServiceReconciler
    registry: CollectorRegistry
    recorder: EventRecorder

    @property
    def namespace(self) -> str:
        return self.namespaces[0]

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        with contextlib.suppress(errors.NotFoundError):
            return await self.client.get(resource, name, namespace or self.namespace)
        return None

    async def rayservice(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return await self.get(RAYSERVICE, name, namespace)

    async def clusters(self, service: str, namespace: str | None = None) -> list[dict[str, Any]]:
        listed = await self.client.list(
            RAYCLUSTER,
            namespace or self.namespace,
            label_selector=f"ray.io/originated-from-cr-name={service}",
        )
        return list(listed.items)

    async def wait(self, probe: Callable[[], Awaitable[Any]], timeout: float = 60.0, what: str = "") -> Any:
        return await eventually(probe, timeout, what)

    async def wait_condition(
        self,
        name: str,
        kind: str,
        status: str,
        timeout: float = 60.0,
        reason: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        last: Any = None

        async def probe() -> dict[str, Any] | None:
            nonlocal last
            obj = await self.rayservice(name, namespace)
            conditions = ((obj or {}).get("status") or {}).get("conditions") or []
            last = conditions
            for c in conditions:
                if c["type"] == kind and c["status"] == status and (reason is None or c["reason"] == reason):
                    return obj
            return None

        try:
            found: dict[str, Any] = await self.wait(probe, timeout)
        except AssertionError:
            raise AssertionError(
                f"RayService {name} never had {kind}={status} ({reason}); last {last}"
            ) from None
        return found

    async def events(self, reason: str, namespace: str | None = None) -> list[dict[str, Any]]:
        await self.recorder.flush()
        listed = await self.client.list(EVENTS_V1, namespace or self.namespace)
        return [e for e in listed.items if e.get("reason") == reason]


@contextlib.asynccontextmanager
async def operator(
    localkube: Any,
    environ: Mapping[str, str] | None = None,
    gates: FeatureGates | None = None,
    namespaces: int = 1,
    **config: Any,
) -> AsyncIterator[Operator]:
    async with running_operator(
        localkube,
        rayservice_setup.install,
        namespaces=namespaces,
        environ=environ,
        gates=gates,
        use_kubernetes_proxy=True,
        **config,
    ) as run:
        yield Operator(run.client, run.namespaces, run.manager, run.reconciler, run.registry, run.recorder)


def with_name(obj: dict[str, Any], namespace: str, name: str | None = None) -> dict[str, Any]:
    body = copy.deepcopy(obj)
    body["metadata"] = {**body.get("metadata", {}), "namespace": namespace}
    if name:
        body["metadata"]["name"] = name
    return body


def set_env(service: dict[str, Any], value: str) -> None:
    """Sets one env var on every container template of the service's cluster: a cluster change."""
    cluster = service["spec"]["rayClusterConfig"]
    templates = [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]
    for template in templates:
        template["spec"]["containers"][0]["env"] = [{"name": "KUBERAY_ECHO_TAG", "value": value}]


async def replace_spec(op: Operator, name: str, change: Any) -> None:
    """Read, change, replace, as `kubectl edit` does: again on a conflict (the operator's status writes
    change the resourceVersion between the read and the write)."""
    for _ in range(10):
        obj = await op.rayservice(name)
        assert obj is not None
        change(obj)
        try:
            await op.client.update(RAYSERVICE, obj)
            return
        except errors.ConflictError:
            continue
    raise AssertionError(f"RayService {name}: ten conflicting writes in a row")


GATEWAY_API_CRDS = Path(__file__).with_name("gateway-api-crds.yaml")


def install_gateway_api(localkube: Any) -> None:
    """The Gateway API CRDs an incremental upgrade writes to (a cluster needs them installed, as localkube does)."""
    localkube.apply(doc for doc in yaml.safe_load_all(GATEWAY_API_CRDS.read_text()) if doc)
