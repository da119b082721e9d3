"""apiserversdk (APIServer v2) on the HTTP port: a reverse proxy to the Kubernetes API with the server's
own credentials, for KubeRay's resources, their Events and the kuberay Services' proxy.

- `/apis/ray.io/v1/...` is forwarded unchanged (lists, watches, selectors: all Kubernetes'), except that a
  POST of, or a PUT to, a RayCluster, RayJob or RayService first goes through the compute-template
  middleware: every group spec (`spec.headGroupSpec`/`workerGroupSpecs`, under `spec.rayClusterSpec` for a
  RayJob, `spec.rayClusterConfig` for a RayService) naming a `computeTemplate` gets the template's
  resources on its containers, its tolerations, and the `ray.io/compute-template` annotation.
- `GET /apis/events.k8s.io/v1/namespaces/{ns}/events` gets `regarding.apiVersion=ray.io/v1` added to its
  field selector.
- `/api/v1/namespaces/{ns}/services/{svc}/proxy[/...]` is forwarded only to a Service labelled
  `app.kubernetes.io/name=kuberay` (404 `kuberay service not found` otherwise).
- Requests the API server answers 408, 429 or 5xx are retried up to 3 times, 500 ms doubling up to 10 s,
  within 30 s; transport errors are not retried.

With authentication on, the caller must pass it first (401 otherwise); the forwarded request still uses
the server's credentials, as upstream's proxy does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import yaml
from fastapi import FastAPI
from lightkube.config.kubeconfig import SingleConfig
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from kuberay.apiserver import clusters, errors, templates
from kuberay.apiserver.auth import Auth
from kuberay.runtime import errors as kube_errors
from kuberay.runtime.client import Client, api_server_http
from kuberay.runtime.resources import CONFIG_MAP, SERVICE, InvalidName

Object = dict[str, Any]

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
MAX_RETRIES = 3
BACKOFF_BASE = 0.5
BACKOFF_MAX = 10.0
DEADLINE = 30.0
KINDS_WITH_TEMPLATES = {
    "rayclusters": (),
    "rayjobs": ("rayClusterSpec",),
    "rayservices": ("rayClusterConfig",),
}
_HOP_HEADERS = frozenset({"host", "authorization", "content-length", "connection", "transfer-encoding", "keep-alive",
                          "accept-encoding"})  # fmt: skip


class MiddlewareError(errors.ApiServerError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _decode(body: bytes, content_type: str) -> Object:
    kind = content_type.split(";")[0].strip().lower()
    try:
        if kind == "application/json":
            value = json.loads(body)
        elif kind == "application/yaml":
            value = yaml.safe_load(body)
        else:
            raise ValueError(kind)
    except (ValueError, yaml.YAMLError) as e:
        raise MiddlewareError(400, "Failed to convert request body to Golang map object") from e
    if not isinstance(value, dict):
        raise MiddlewareError(400, "Failed to convert request body to Golang map object")
    return value


def _groups(obj: Object, plural: str) -> list[tuple[Object, str]]:
    spec = obj.get("spec") or {}
    for key in KINDS_WITH_TEMPLATES[plural]:
        spec = spec.get(key) or {}
    found: list[tuple[Object, str]] = []
    head = spec.get("headGroupSpec")
    if isinstance(head, dict):
        found.append((head, "ray-head"))
    for worker in spec.get("workerGroupSpecs") or []:
        if isinstance(worker, dict):
            found.append((worker, "ray-worker"))
    return found


def apply_template(group: Object, container_name: str, template: Object) -> None:
    """The template's resources, tolerations and annotation on one group spec (in place)."""
    pod = group.setdefault("template", {})
    pod.setdefault("metadata", {}).setdefault("annotations", {})[clusters.COMPUTE_TEMPLATE_ANNOTATION] = (
        template["name"]
    )
    spec = pod.setdefault("spec", {})
    memory = f"{template.get('memory', 0)}{template.get('memory_unit', '')}"
    for container in spec.get("containers") or []:
        resources = container.setdefault("resources", {})
        for part in ("limits", "requests"):
            quantities = resources.setdefault(part, {})
            quantities["cpu"] = str(template.get("cpu", 0))
            quantities["memory"] = memory
            if container.get("name") != container_name:
                continue
            if template.get("gpu"):
                quantities[template.get("gpu_accelerator") or clusters.DEFAULT_GPU] = template["gpu"]
            for name, amount in (template.get("extended_resources") or {}).items():
                quantities[name] = amount
    if template.get("tolerations"):
        spec.setdefault("tolerations", []).extend(template["tolerations"])


def unforwardable(path: str) -> Response | None:
    """400 for a path (decoded) that a URL's normalization would make another: a `.` or `..` segment (httpx
    removes them, so `/apis/ray.io/v1/../../api/v1/...` would reach any object the server's credentials
    can read), or a character no path carries (a NUL, a control character)."""
    if any(segment in (".", "..") for segment in path.split("/")):
        return JSONResponse(
            {"message": f"invalid path {path[:200]!r}: may not contain '.' or '..' segments"}, 400
        )
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return JSONResponse(
            {"message": f"invalid path {path[:200]!r}: may not contain control characters"}, 400
        )
    return None


class Proxy:
    def __init__(self, config: SingleConfig, kube: Client, auth: Auth) -> None:
        self._server = config.cluster.server.rstrip("/")
        self._http = api_server_http(config, DEADLINE)
        self._kube = kube
        self._auth = auth

    async def close(self) -> None:
        await self._http.aclose()

    async def _template(self, name: str, namespace: str) -> Object:
        try:
            return templates.from_config_map(await self._kube.get(CONFIG_MAP, name, namespace))
        except kube_errors.KubeError as e:
            raise MiddlewareError(
                422, f"Cannot get compute template for name '{name}' in namespace '{namespace}', error: {e}"
            ) from e

    async def _with_templates(self, body: bytes, content_type: str, plural: str, namespace: str) -> bytes:
        obj = _decode(body, content_type)
        for group, container in _groups(obj, plural):
            name = group.get("computeTemplate")
            if isinstance(name, str):
                apply_template(group, container, await self._template(name, namespace))
        return json.dumps(obj).encode()

    async def _forward(self, request: Request, *, content: bytes | None = None,
                       params: Sequence[tuple[str, str]] | None = None, content_type: str | None = None) -> Response:  # fmt: skip
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        # The answer is passed on byte for byte without its Content-Encoding, so it must come uncompressed
        # (httpx would ask for gzip, which kube-apiserver uses for answers over 128 KiB).
        headers["accept-encoding"] = "identity"
        if content_type:
            headers["content-type"] = content_type
        body = content if content is not None else await request.body()
        query = list(params if params is not None else request.query_params.multi_items())
        # The path as the client sent it, encoding kept (`%2F` stays inside its segment, `%3F` is no query),
        # as Go's ReverseProxy forwards it; `unforwardable` has checked its decoded form.
        url = self._server + request.scope.get("raw_path", request.url.path.encode()).decode("latin-1")
        deadline = time.monotonic() + DEADLINE
        streaming = any(k == "watch" and v in ("1", "true") for k, v in query)
        for attempt in range(MAX_RETRIES + 1):
            try:
                upstream = self._http.build_request(request.method, url, params=tuple(query), headers=headers,
                                                    content=body, timeout=None if streaming else DEADLINE)  # fmt: skip
            except httpx.InvalidURL as e:
                return JSONResponse({"message": f"invalid request URL: {e}"}, status_code=400)
            try:
                answer = await self._http.send(upstream, stream=True)
            except httpx.HTTPError as e:
                return JSONResponse({"message": f"proxy error: {e}"}, status_code=502)
            if answer.status_code not in RETRY_STATUS or attempt == MAX_RETRIES:
                break
            wait = min(BACKOFF_BASE * 2**attempt, BACKOFF_MAX)
            if time.monotonic() + wait > deadline:
                break
            await answer.aclose()
            await asyncio.sleep(wait)
        out_headers = {
            k: v for k, v in answer.headers.items() if k.lower() not in _HOP_HEADERS | {"content-encoding"}
        }
        return StreamingResponse(answer.aiter_raw(), status_code=answer.status_code, headers=out_headers,
                                 background=BackgroundTask(answer.aclose))  # fmt: skip

    async def _admitted(self, request: Request) -> Response | None:
        """The refusal of a caller who may not pass, or of a path that would name another one."""
        try:
            await self._auth.backend_for(request.headers.get("authorization"))
        except errors.UserError as e:
            return JSONResponse(e.http_body(), status_code=e.http_status)
        return unforwardable(request.url.path)

    async def ray(self, request: Request) -> Response:
        refused = await self._admitted(request)
        if refused:
            return refused
        path = request.url.path
        parts = path.split("/")
        # /apis/ray.io/v1/namespaces/{ns}/{plural}[/{name}]
        if (len(parts) in (7, 8) and parts[4] == "namespaces" and parts[6] in KINDS_WITH_TEMPLATES
                and (request.method == "POST" and len(parts) == 7 or request.method == "PUT" and len(parts) == 8)):  # fmt: skip
            try:
                body = await self._with_templates(await request.body(), request.headers.get("content-type", ""),
                                                  parts[6], parts[5])  # fmt: skip
            except MiddlewareError as e:
                return Response(str(e), status_code=e.status)
            return await self._forward(request, content=body, content_type="application/json")
        return await self._forward(request)

    async def events(self, request: Request) -> Response:
        refused = await self._admitted(request)
        if refused:
            return refused
        params = [(k, v) for k, v in request.query_params.multi_items() if k != "fieldSelector"]
        selectors = [v for k, v in request.query_params.multi_items() if k == "fieldSelector" and v]
        params.append(("fieldSelector", ",".join([*selectors, "regarding.apiVersion=ray.io/v1"])))
        return await self._forward(request, params=params)

    async def service_proxy(self, request: Request) -> Response:
        refused = await self._admitted(request)
        if refused:
            return refused
        namespace, target = request.path_params["namespace"], request.path_params["service"]
        pieces = target.split(":")
        if len(pieces) > 3 or not all(pieces[: 2 if len(pieces) == 3 else 1]):
            return Response("invalid service name format", status_code=400)
        name = pieces[1] if len(pieces) == 3 else pieces[0]
        try:
            page = await self._kube.list(
                SERVICE, namespace, label_selector=f"{clusters.APP_NAME_LABEL}={clusters.APP_NAME}"
            )
        except (InvalidName, kube_errors.Invalid) as e:  # a namespace no path can carry (`%`, 64 KiB)
            return Response(str(e), status_code=400)
        except kube_errors.KubeError as e:
            return Response(f"failed to list services: {e}", status_code=500)
        if not any(s["metadata"]["name"] == name for s in page.items):
            return Response("kuberay service not found", status_code=404)
        return await self._forward(request)


def installer(config: SingleConfig, kube: Client, auth: Auth) -> Callable[[FastAPI], None]:
    proxy = Proxy(config, kube, auth)
    every = ["GET", "POST", "PUT", "PATCH", "DELETE"]

    def install(app: FastAPI) -> None:
        app.router.routes.extend([
            Route("/apis/events.k8s.io/v1/namespaces/{namespace}/events", proxy.events, methods=["GET"]),
            Route("/apis/ray.io/v1/{rest:path}", proxy.ray, methods=every),
            Route("/api/v1/namespaces/{namespace}/services/{service}/proxy", proxy.service_proxy, methods=every),
            Route("/api/v1/namespaces/{namespace}/services/{service}/proxy/{rest:path}", proxy.service_proxy,
                  methods=every),
        ])  # fmt: skip

    return install
