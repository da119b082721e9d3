"""The APIServer under attack: every route its app declares (the v1 gateway's routes from the protos, the
v2 proxy's, Swagger's, health and metrics: a new one is drilled without a word here), with hostile values
(hostile_http.py) in each path parameter, in each query parameter (a v1 request message's fields not in
its path; the Kubernetes list parameters the v2 proxy forwards) and in the names of each request body,
then oversized and malformed query strings, then requests without a token and with wrong ones
(`-auth-token-file` on).

The server is built as `kuberay-apiserver` builds it, as deploy/apiserver's ServiceAccount with its RBAC,
against the session's localkube, with a kuberay Service whose endpoint is a stand-in dashboard here. The
secret: a ConfigMap beside the drilled namespace's Ray objects (the ServiceAccount may read ConfigMaps, so
only the server's own rules keep a request from reaching it) and a file beside the Swagger directory.
Invariants: no answer is a 5xx or a hang, no body carries the secret and the ConfigMap is unchanged at the
end (reads are sent before writes, so that an escaped DELETE cannot hide an escaped GET), every 4xx says
why, every request without the token is refused. The counts are printed.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from integration.apiserver.conftest import apiserver_kubeconfig
from kuberay.apiserver import gateway, proxy, services
from kuberay.apiserver.auth import TokenFileAuth
from kuberay.apiserver.backend import Backend
from kuberay.apiserver.dispatch import Dispatcher, ServerMetrics
from kuberay.apiserver.protos import Method, methods
from kuberay.controllers.dashboards import dashboard_access
from kuberay.runtime.client import Client, load_config
from reliability.hostile_http import Answer, Tally, Target, call, hostile_values, malformed_queries, targets
from support.localkube_process import LocalKubeProcess

TOKEN = "drill-token"
SECRET_CONFIG_MAP = "drill-secret"
# The v2 proxy forwards the query to Kubernetes; a watch is a stream that does not end, so it is left out.
KUBE_QUERY = ("fieldSelector", "labelSelector", "limit", "continue", "resourceVersion", "timeoutSeconds")
OPEN = ("/healthz", "/metrics", "/swagger")
PARALLEL = 8


@pytest.fixture
async def standin() -> AsyncIterator[int]:
    """A Ray dashboard stand-in on loopback, the endpoint of the kuberay Service and of cluster `x`'s head
    Service: no jobs, a submission accepted, anything else not found, at once."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, path = head.split(b" ", 2)[:2]
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
        await reader.readexactly(length)
        status, body = b"404 Not Found", b'{"detail": "not found"}'
        if path.split(b"?")[0] == b"/api/jobs/":
            status, body = b"200 OK", b'{"submission_id": "s1"}' if method == b"POST" else b"[]"
        writer.write(b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                     b"connection: close\r\n\r\n%s" % (status, len(body), body))  # fmt: skip
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def _plant(localkube: LocalKubeProcess, namespace: str, secret: str, port: int) -> None:
    labels = {"app.kubernetes.io/name": "kuberay"}
    localkube.apply([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": SECRET_CONFIG_MAP, "namespace": namespace},
         "data": {"secret": secret}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": namespace, "labels": labels},
         "spec": {"ports": [{"name": "http", "port": 8265}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "svc", "namespace": namespace},
         "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "http", "port": port}]}]},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x-head-svc", "namespace": namespace},
         "spec": {"ports": [{"name": "dashboard", "port": 8265}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "x-head-svc", "namespace": namespace},
         "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "dashboard", "port": port}]}]},
    ])  # fmt: skip


def _valid(target: Target, namespace: str) -> dict[str, str]:
    """A valid value of each path parameter, so that each is attacked on its own."""
    rest = f"namespaces/{namespace}/rayclusters" if target.path.startswith("/apis/ray.io/") else ""
    name = "a.swagger.json" if target.path.startswith("/swagger/") else "x"
    values = {"namespace": namespace, "name": name, "clustername": "x", "submissionid": "x", "service": "svc",
              "rest": rest, "path": "index.html"}  # fmt: skip
    return {p: values.get(p, "x") for p in target.params}  # a parameter new to the drill is attacked too


def _query_names(target: Target, method: Method | None) -> list[str]:
    """A v1 request message's fields that its path does not fill; the v2 proxy's Kubernetes parameters."""
    if method is not None:
        return [f.name for f in method.request.DESCRIPTOR.fields if f.name not in target.params]
    return list(KUBE_QUERY) if "{rest" in target.path or "events" in target.path else []


def _apiserver(localkube: LocalKubeProcess, tmp_path: Path) -> tuple[Any, Client, Backend]:
    """The app as `kuberay-apiserver -use-kubernetes-proxy -auth-token-file ... -localSwaggerPath ...`
    builds it, as deploy/apiserver's ServiceAccount (job submissions reach the stand-in through the head
    Service's proxy)."""
    swagger = tmp_path / "swagger"
    swagger.mkdir()
    (swagger / "a.swagger.json").write_text("{}")
    (tmp_path / "tokens").write_text(f"{TOKEN}\n")
    kubeconfig = str(apiserver_kubeconfig(localkube, tmp_path / "kubeconfig"))
    config = load_config(kubeconfig)
    kube = Client.from_config(config, user_agent="kuberay-apiserver", field_manager="kuberay-apiserver")
    backend = Backend(kube, dashboard_access(True, kubeconfig))
    auth = TokenFileAuth(backend, tmp_path / "tokens")
    registry = CollectorRegistry()
    dispatcher = Dispatcher(services.HANDLERS, ServerMetrics(registry), 10.0)
    app = gateway.build_app(dispatcher, auth, registry, gateway.Health(), extra=proxy.installer(config, kube, auth),
                            swagger_dir=str(swagger))  # fmt: skip
    return app, kube, backend


async def test_the_apiserver_under_attack(
    localkube: LocalKubeProcess, namespace: str, tmp_path: Path, standin: int
) -> None:
    secret = f"SECRET-{uuid.uuid4().hex}"
    _plant(localkube, namespace, secret, standin)
    (tmp_path / "secret.txt").write_text(secret)
    planted = _config_map(localkube, namespace)
    app, kube, backend = _apiserver(localkube, tmp_path)
    # To the ConfigMap from the v2 proxy's /apis/ray.io/v1/ (3) and a service proxy's path (7); to the file
    # beside the Swagger directory (1).
    kube_path = f"api/v1/namespaces/{namespace}/configmaps/{SECRET_CONFIG_MAP}"
    labels = {v: label for label, v in hostile_values(f"/{kube_path}", (3, 7), kube_path)}
    for label, value in hostile_values(str(tmp_path / "secret.txt"), (1,)):
        labels.setdefault(value, f"{label} (file)")  # once each value: `..` is `..` whatever it aims at
    values = sorted((label, value) for value, label in labels.items())
    by_route = {(m.route.method, m.route.path): m for m in methods()}
    tally = Tally(
        "APIServer hostile input", [secret.encode()], "outside what the routes name (a ConfigMap, a file)"
    )
    limit = asyncio.Semaphore(PARALLEL)
    checks = [
        request
        for target in targets(app.routes)
        for verb in target.methods
        for request in _requests(target, verb, by_route.get((verb, target.path)), _valid(target, namespace),
                                 values)
    ]  # fmt: skip
    try:
        # Reads first: a write that escaped (a DELETE of the ConfigMap) must not hide a read that escaped.
        for reads in (True, False):
            await asyncio.gather(*(_check(app, tally, limit, *c) for c in checks if (c[2] == "GET") == reads))
    finally:
        tally.report()
        for owner in {getattr(getattr(r, "endpoint", None), "__self__", None) for r in app.routes}:
            if isinstance(owner, proxy.Proxy):
                await owner.close()
        await backend.dashboards.http.aclose()
        await kube.close()
    tally.assert_clean()
    assert _config_map(localkube, namespace) == planted, "a request changed the ConfigMap outside the routes"


def _config_map(localkube: LocalKubeProcess, namespace: str) -> dict[str, Any]:
    with localkube.client(timeout=30) as admin:
        found = admin.get(f"/api/v1/namespaces/{namespace}/configmaps/{SECRET_CONFIG_MAP}")
        assert found.status_code == 200, found.text
        return {"data": found.json()["data"], "resourceVersion": found.json()["metadata"]["resourceVersion"]}


Request = tuple[
    str, str, str, str, bytes, list[tuple[str, str]], bool
]  # route, what, verb, url, body, headers, refused


def _requests(
    target: Target, verb: str, method: Method | None, base: dict[str, str], values: list[tuple[str, str]]
) -> list[Request]:
    route, good = f"{verb} {target.path}", [("authorization", f"Bearer {TOKEN}")]
    body = b"{}" if verb in ("POST", "PUT", "PATCH") else b""
    typed = [*good, ("content-type", "application/json")]
    found: list[Request] = []
    for param in target.params:  # each path parameter
        for label, value in values:
            url = target.url(base | {param: value})
            found.append((route, f"{param}={label} ({url[:160]})", verb, url, body, typed, False))
    for name in _query_names(target, method):  # each query parameter
        for label, value in values:
            found.append(
                (route, f"?{name}={label}", verb, f"{target.url(base)}?{name}={value}", body, typed, False)
            )
    if method is not None and method.route.body not in ("", "*"):  # the names in the body
        for field in ("name", "namespace"):
            for label, value in values:
                named = {
                    "name": "x",
                    "namespace": base.get("namespace", "x"),
                    field: urllib.parse.unquote(value),
                }
                raw = json.dumps(named).encode()  # the body is the message field `route.body` names
                found.append((route, f"body {field}={label}", verb, target.url(base), raw, typed, False))
    for label, query in malformed_queries(_query_names(target, method) or ["x"]):
        found.append((route, f"query: {label}", verb, f"{target.url(base)}?{query}", body, typed, False))
    refused = not target.path.startswith(OPEN)
    for label, headers in (("no token", []), ("wrong token", [("authorization", "Bearer wrong")]),
                           ("bare wrong token", [("authorization", "wrong")]), ("empty bearer", [("authorization", "Bearer ")]),
                           ("token with a NUL", [("authorization", f"Bearer {TOKEN}\x00")]),
                           ("very long token", [("authorization", "Bearer " + "t" * 65536)]),
                           ("token's prefix", [("authorization", f"Bearer {TOKEN[:-1]}")])):  # fmt: skip
        found.append((route, f"auth: {label}", verb, target.url(base), body, headers, refused))
    return found


async def _check(app: Any, tally: Tally, limit: asyncio.Semaphore, route: str, what: str, verb: str, url: str,
                 body: bytes, headers: list[tuple[str, str]], refused: bool) -> None:  # fmt: skip
    async with limit:
        answer: Answer | None = await call(app, verb, url, headers, body)
    tally.check(route, what, answer, refused=refused)
