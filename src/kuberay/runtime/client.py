"""The operator's one door to the Kubernetes API: typed errors, dict objects, client-side rate limiting.

lightkube supplies the connection: kubeconfig and in-cluster configuration, authentication (tokens, token
files re-read on 401, exec plugins, client certificates), TLS, and its httpx2 transport. On top of that
transport this module speaks the REST API directly with orjson, so every object in and out is a plain
JSON-shaped dict, built-in kinds and custom resources alike, and no typed model sits between the wire and
the cache.

Invariants:
- Every request first takes a token from its kind's bucket (`--qps`, `--burst` each); a retry takes another.
  controller-runtime gives each group-version-kind its own REST client and so its own token bucket (its
  list types share their item's), which is what upstream's `--qps` means: pod creates are not slowed by
  the Events or status writes made beside them.
- An answer of 429 or 5xx with a `Retry-After` header (seconds) is retried after that many seconds, at most
  `MAX_RETRIES` times, as client-go does (the API server's priority and fairness asks for it).
- Every request is measured in client-go's `rest_client_*` metrics (`RestClientMetrics`).
- Every failure surfaces as a `kuberay.runtime.errors.KubeError` subclass chained to its cause; nothing
  from httpx2 escapes. A request that never left is `Unavailable`; one sent without an answer is
  `OutcomeUnknown`, since the server may have done it.
- Writes carry `fieldManager` (the operator's name) so server-side field ownership is attributed.
- A client made by `fenced(guard)` sends a write (any verb but GET) only while `guard()` is true, checked
  as each attempt's headers and then its body are about to go out (after the wait for a token and for a
  connection, as httpcore's `send_request_headers` and `send_request_body` trace events start): a replica
  that lost its leader lease while it was paused refuses the writes it had under way with `NotLeader`
  instead of racing the new leader. (Checked any earlier, a pause that struck while the request waited for
  its connection, or between its headers and its body, let it out on resume.)
"""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

import httpx
import httpx2
import orjson
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import DEFAULT_KUBECONFIG, SERVICE_ACCOUNT, KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError
from prometheus_client import CollectorRegistry

from kuberay.runtime import errors
from kuberay.runtime.clock import Clock, SystemClock
from kuberay.runtime.metrics import RestClientMetrics
from kuberay.runtime.ratelimit import TokenBucket
from kuberay.runtime.resources import Resource

Object = dict[str, Any]

MAX_RETRIES = 10  # client-go's default for a request the server asks to retry
# Transport failures that happen before a request leaves: no connection was had, so nothing was done.
_UNSENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
UNANSWERED = "sent without an answer: it may have been carried out"
UNBOUNDED_CONNECTIONS = httpx2.Limits(max_connections=None, max_keepalive_connections=20)


class PatchType(StrEnum):
    """Patch kinds, by the Content-Type the API server expects."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True)
class ObjectList:
    items: list[Object]
    resource_version: str
    continue_token: str


class ConfigurationError(errors.ControllerRuntimeError):
    """No usable connection configuration (bad kubeconfig, missing context, no in-cluster account)."""


def load_config(kubeconfig: str | None = None, context: str | None = None) -> SingleConfig:
    """The connection configuration, chosen as controller-runtime does: the `--kubeconfig` path, else the
    KUBECONFIG variable, else the in-cluster service account, else ~/.kube/config."""
    try:
        if kubeconfig:
            config = KubeConfig.from_file(kubeconfig)
        elif os.environ.get("KUBECONFIG"):
            config = KubeConfig.from_file(os.environ["KUBECONFIG"].split(os.pathsep)[0])
        elif Path(SERVICE_ACCOUNT).exists():
            config = KubeConfig.from_service_account()
        else:
            config = KubeConfig.from_file(Path(DEFAULT_KUBECONFIG).expanduser())
        single = config.get(context)
    except (ConfigError, OSError, ValueError, KeyError) as e:
        raise ConfigurationError(f"cannot load Kubernetes configuration: {e}") from e
    if single is None:
        raise ConfigurationError("cannot load Kubernetes configuration: no current context")
    return single


class _LightkubeAuth(httpx.Auth):
    """lightkube's authentication of a kubeconfig user (bearer token, token file re-read on 401, exec plugin,
    basic auth), on the requests of an httpx client. lightkube's flows only set the Authorization header and
    read the response's status code, which httpx's requests and responses have as httpx2's do."""

    def __init__(self, auth: httpx2.Auth) -> None:
        self._auth = auth

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        flow = self._auth.sync_auth_flow(cast(httpx2.Request, request))
        outgoing = next(flow)
        while True:
            response = yield cast(httpx.Request, outgoing)
            try:
                outgoing = flow.send(cast(httpx2.Response, response))
            except StopIteration:
                return

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        flow = self._auth.async_auth_flow(cast(httpx2.Request, request))
        outgoing = await flow.__anext__()
        while True:
            response = yield cast(httpx.Request, outgoing)
            try:
                outgoing = await flow.asend(cast(httpx2.Response, response))
            except StopAsyncIteration:
                return


def api_server_http(config: SingleConfig, timeout: float) -> httpx.AsyncClient:
    """A plain httpx client for raw requests to the API server (its service proxy), trusting and
    authenticating as lightkube's own client does: the cluster's CA, the user's client certificate, and the
    user's token, token file, exec plugin or basic auth."""
    user = config.user
    if user is None:
        return httpx.AsyncClient(timeout=timeout)
    verify = client_adapter.verify_cluster(config.cluster, user, config.abs_file)
    auth = client_adapter.user_auth(user)
    return httpx.AsyncClient(timeout=timeout, verify=verify, auth=_LightkubeAuth(auth) if auth else None)


class Client:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        *,
        qps: float = 100.0,
        burst: int = 200,
        clock: Clock | None = None,
        field_manager: str = "kuberay-operator",
        metrics: RestClientMetrics | None = None,
    ) -> None:
        self._http = http
        self._clock = clock or SystemClock()
        self._qps = qps
        self._burst = burst
        # Shared with every `fenced` copy: one limit per kind whichever copy sends.
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self.field_manager = field_manager
        # Unregistered by default: measured all the same, served by nobody.
        self._metrics = metrics or RestClientMetrics(CollectorRegistry())
        self._host = http.base_url.netloc.decode() or "none"
        self._guard: Callable[[], bool] | None = None

    def fenced(self, guard: Callable[[], bool]) -> Client:
        """This client (same connection, rate limit and metrics) refusing writes while `guard()` is false."""
        fenced = copy.copy(self)
        fenced._guard = guard
        return fenced

    @classmethod
    def from_config(
        cls,
        config: SingleConfig,
        *,
        user_agent: str = "kuberay-operator/nightly",
        timeout: float = 30.0,
        **kwargs: Any,
    ) -> Client:
        params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout))
        # Every watch holds a connection for as long as it runs, one per kind and watched namespace, so a
        # bounded pool (httpx's 100) is used up by watches alone with a dozen namespaces and every other
        # request then waits for a connection that never frees. Go's client bounds none either.
        http = httpx2.AsyncClient(**params.httpx_params(config), limits=UNBOUNDED_CONNECTIONS)
        http.headers["User-Agent"] = user_agent
        http.headers["Accept"] = "application/json"
        return cls(http, **kwargs)

    async def close(self) -> None:
        await self._http.aclose()

    async def get(
        self, resource: Resource, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> Object:
        return await self._request(
            "GET", resource, resource.path(_ns(resource, namespace), name, subresource)
        )

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        """One page of a list; `namespace=None` lists all namespaces."""
        params = _params(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=str(limit) if limit else None,
            resourceVersion=resource_version,
        )
        if continue_token:
            params["continue"] = continue_token
        body = await self._request("GET", resource, resource.path(namespace), params=params)
        metadata = body.get("metadata") or {}
        items: list[Object] = body.get("items") or []
        # List items carry no apiVersion/kind; callers and caches expect whole objects.
        for item in items:
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return ObjectList(items, metadata.get("resourceVersion", ""), metadata.get("continue", ""))

    async def list_all(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        page_size: int = 500,
        **selectors: str | None,
    ) -> ObjectList:
        """Every page of a list, and the resourceVersion of the snapshot they form."""
        items: list[Object] = []
        token: str | None = None
        while True:
            page = await self.list(resource, namespace, limit=page_size, continue_token=token, **selectors)
            items.extend(page.items)
            if not page.continue_token:
                return ObjectList(items, page.resource_version, "")
            token = page.continue_token

    async def create(
        self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None
    ) -> Object:
        ns = _ns(resource, namespace or _object_namespace(obj))
        return await self._request(
            "POST", resource, resource.path(ns), body=_with_type(resource, obj), params=self._write_params()
        )

    async def update(
        self, resource: Resource, obj: Mapping[str, Any], *, subresource: str | None = None
    ) -> Object:
        """Replaces the object (PUT); a stale metadata.resourceVersion raises `ConflictError`."""
        name = (obj.get("metadata") or {}).get("name") or ""
        path = resource.path(_ns(resource, _object_namespace(obj)), name, subresource)
        return await self._request(
            "PUT", resource, path, body=_with_type(resource, obj), params=self._write_params()
        )

    async def update_status(self, resource: Resource, obj: Mapping[str, Any]) -> Object:
        return await self.update(resource, obj, subresource="status")

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        force: bool = False,
    ) -> Object:
        params = self._write_params()
        if force:
            params["force"] = "true"
        content = patch if isinstance(patch, bytes) else orjson.dumps(patch)
        return await self._request(
            "PATCH",
            resource,
            resource.path(_ns(resource, namespace), name, subresource),
            content=content,
            params=params,
            content_type=patch_type.value,
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> None:
        options: Object = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        await self._request("DELETE", resource, resource.path(_ns(resource, namespace), name), body=options)

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[Object]:
        """The raw watch events (`{"type", "object"}`), bookmarks included, until the server ends the
        stream. An `ERROR` event is raised as the error its Status names (410 → `Gone`)."""
        params = _params(
            watch="true",
            allowWatchBookmarks="true",
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            timeoutSeconds=str(timeout_seconds),
        )
        await self._throttle("GET", resource)
        # A silent connection is dead once the server's own timeout has long passed.
        timeout = httpx2.Timeout(30.0, read=timeout_seconds + 30.0)
        answered = False
        try:
            async with self._http.stream(
                "GET", resource.path(namespace), params=params, timeout=timeout
            ) as response:
                answered = True
                self._metrics.attempted("GET", self._host, response.status_code, 0)
                if response.status_code >= 400:
                    raise _status_error(response, await response.aread())
                async for line in response.aiter_lines():
                    if line.strip():
                        yield _decode_event(line)
        except httpx2.HTTPError as e:
            if not answered:
                self._metrics.attempted("GET", self._host, None, 0)
            raise errors.Unavailable(f"watch {resource}: {_described(e)}") from e

    def _write_params(self) -> dict[str, str]:
        return {"fieldManager": self.field_manager}

    async def _request(
        self,
        method: str,
        resource: Resource,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content: bytes | None = None,
        content_type: str = "application/json",
    ) -> Object:
        started = self._clock.monotonic()
        try:
            response = await self._send(method, resource, path, params, body, content, content_type)
        finally:
            self._metrics.finished(method, self._host, self._clock.monotonic() - started)
        self._metrics.received(method, self._host, len(response.content))
        if response.status_code >= 400:
            raise _status_error(response, response.content)
        if not response.content:
            return {}
        decoded: Object = orjson.loads(response.content)
        return decoded

    async def _send(
        self,
        method: str,
        resource: Resource,
        path: str,
        params: Mapping[str, str] | None,
        body: Any,
        content: bytes | None,
        content_type: str,
    ) -> httpx2.Response:
        """The request's attempts: the first, and one more per answer that asks for a retry."""
        if body is not None:
            content = orjson.dumps(body)
        headers = {"Content-Type": content_type} if content is not None else None
        extensions = None if self._guard is None or method == "GET" else {"trace": self._fence(method, path)}
        await self._throttle(method, resource)
        retries = 0
        while True:
            if extensions is not None:
                # Refused here without a connection; the trace checks again as the bytes go out.
                self._refuse_unless_guarded(method, path)
            try:
                response = await self._http.request(
                    method, path, params=params, content=content, headers=headers, extensions=extensions
                )
            except httpx2.InvalidURL as e:
                # A URL no request can carry (a 64 KiB continue token): refused before anything is sent,
                # as the API server would refuse it; the same request cannot do better later.
                raise errors.Invalid(f"{method} {path[:200]}: {e}", status=400, reason="BadRequest") from e
            except httpx2.HTTPError as e:
                self._metrics.attempted(method, self._host, None, len(content or b""))
                if isinstance(e, _UNSENT):
                    raise errors.Unavailable(f"{method} {path}: {_described(e)}") from e
                raise errors.OutcomeUnknown(f"{method} {path}: {_described(e)}; {UNANSWERED}") from e
            self._metrics.attempted(method, self._host, response.status_code, len(content or b""))
            if retries > 0:
                self._metrics.retried(method, self._host, response.status_code)
            wait = _retry_after(response)
            if wait is None or retries >= MAX_RETRIES:
                return response
            retries += 1
            await self._clock.sleep(wait)
            await self._throttle(method, resource)

    def _refuse_unless_guarded(self, method: str, path: str) -> None:
        if self._guard is not None and not self._guard():
            raise errors.NotLeader(f"{method} {path}: refused, the leader lease is no longer held")

    def _fence(self, method: str, path: str) -> Callable[[str, Any], Awaitable[None]]:
        """httpcore's trace callback refusing to send a request's headers, or its body, while the guard is false."""

        async def trace(event: str, _: Any) -> None:
            # The body too: each write first yields to the event loop, so a pause can fall between the
            # headers and the body; the server, left without a body, then never carries out the request.
            if event.endswith((".send_request_headers.started", ".send_request_body.started")):
                self._refuse_unless_guarded(method, path)

        return trace

    async def _throttle(self, verb: str, resource: Resource) -> None:
        started = self._clock.monotonic()
        kind = (resource.api_version, resource.kind)
        bucket = self._buckets.get(kind)
        if bucket is None:
            bucket = self._buckets[kind] = TokenBucket(self._qps, self._burst, self._clock)
        await bucket.acquire()
        self._metrics.throttled(verb, self._host, self._clock.monotonic() - started)


def _described(error: httpx2.HTTPError) -> str:
    # Some (a pool or connect timeout) carry no message: their name is all the log would say.
    return str(error) or type(error).__name__


def _retry_after(response: httpx2.Response) -> int | None:
    """client-go's `checkWait`: the seconds a 429 or 5xx answer asks the client to wait before retrying."""
    if response.status_code != 429 and response.status_code < 500:
        return None
    value = response.headers.get("Retry-After", "")
    try:
        seconds = int(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _status_error(response: httpx2.Response, content: bytes) -> errors.KubeError:
    try:
        body = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        body = {"message": content.decode(errors="replace")[:500]}
    error = errors.from_status(response.status_code, body)
    try:
        response.raise_for_status()
    except httpx2.HTTPStatusError as cause:
        error.__cause__ = cause
    return error


def _decode_event(line: str) -> Object:
    event: Object = orjson.loads(line)
    if event.get("type") == "ERROR":
        status = event.get("object") or {}
        raise errors.from_status(int(status.get("code") or 500), status)
    return event


def _params(**values: str | None) -> dict[str, str]:
    return {k: v for k, v in values.items() if v}


def _ns(resource: Resource, namespace: str | None) -> str | None:
    if not resource.namespaced:
        return None
    if not namespace:
        raise ValueError(f"{resource.kind} is namespaced: a namespace is required")
    return namespace


def _object_namespace(obj: Mapping[str, Any]) -> str | None:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return str(namespace) if namespace else None


def _with_type(resource: Resource, obj: Mapping[str, Any]) -> Mapping[str, Any]:
    if obj.get("apiVersion") and obj.get("kind"):
        return obj
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
