"""The node agent's door to an API server (`localkube agent`): REST requests and watches of JSON-shaped dicts.

lightkube supplies the connection, as for the operator: kubeconfig, authentication, TLS and its httpx2
transport; requests and answers are plain dicts through orjson. Every failure surfaces as `RequestFailed` with
the HTTP status (0 when the server could not be reached) and the server's reason and message.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx2
import orjson
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from localkube.node.errors import NodeError

Object = dict[str, Any]
USER_AGENT = "localkube-agent"


class RequestFailed(NodeError):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason


def load_config(path: str) -> SingleConfig:
    """The kubeconfig's current context; a clear error when it cannot be used."""
    try:
        single = KubeConfig.from_file(path).get()
    except (ConfigError, OSError, ValueError, KeyError) as err:
        raise RequestFailed(0, "BadConfig", f"--kubeconfig {path}: {err}") from err
    if single is None:
        raise RequestFailed(0, "BadConfig", f"--kubeconfig {path}: no current context")
    return single


def server_address(config: SingleConfig) -> tuple[str, int]:
    """Host and port of the API server, as pods are to dial it."""
    url = urlsplit(config.cluster.server)
    return url.hostname or "127.0.0.1", url.port or (443 if url.scheme == "https" else 80)


def cluster_ca(config: SingleConfig) -> bytes:
    """The CA certificate the kubeconfig trusts the server with (empty when it names none)."""
    cluster = config.cluster
    if cluster.certificate_auth_data:
        return base64.b64decode(cluster.certificate_auth_data)
    if cluster.certificate_auth:
        with open(config.abs_file(cluster.certificate_auth), "rb") as file:
            return file.read()
    return b""


def _params(timeout: float | None) -> client_adapter.ConnectionParams:
    return client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout))


class ApiClient:
    """Async requests to the API server (`request`, `watch`) and blocking ones (`request_now`) for the few
    answers a synchronous reconcile needs at once (a service-account token)."""

    def __init__(self, config: SingleConfig, timeout: float = 30.0) -> None:
        self._http = client_adapter.AsyncClient(config, _params(timeout))
        # Watches stay open for minutes; the server ends them (timeoutSeconds), not the read timeout.
        self._stream = client_adapter.AsyncClient(config, _params(None))
        self._blocking = client_adapter.Client(config, _params(timeout))
        for http in (self._http, self._stream, self._blocking):
            http.headers["User-Agent"] = USER_AGENT
            http.headers["Accept"] = "application/json"

    async def close(self) -> None:
        await self._http.aclose()
        await self._stream.aclose()
        self._blocking.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Object:
        content = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if content is not None else None
        try:
            response = await self._http.request(method, path, params=params, content=content, headers=headers)
        except httpx2.HTTPError as err:
            raise RequestFailed(0, "Unavailable", f"{method} {path}: {err}") from err
        return _answer(method, path, response.status_code, response.content)

    def request_now(self, method: str, path: str, body: Any) -> Object:
        try:
            response = self._blocking.request(
                method, path, content=orjson.dumps(body), headers={"Content-Type": "application/json"}
            )
        except httpx2.HTTPError as err:
            raise RequestFailed(0, "Unavailable", f"{method} {path}: {err}") from err
        return _answer(method, path, response.status_code, response.content)

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[Object]:
        """The watch events (`{"type": ..., "object": ...}`) of `path` until the server ends the stream."""
        try:
            async with self._stream.stream("GET", path, params={**params, "watch": "true"}) as response:
                if response.status_code >= 400:
                    _answer("WATCH", path, response.status_code, await response.aread())
                async for line in response.aiter_lines():
                    if line:
                        yield orjson.loads(line)
        except httpx2.HTTPError as err:
            raise RequestFailed(0, "Unavailable", f"WATCH {path}: {err}") from err


def _answer(method: str, path: str, status: int, content: bytes) -> Object:
    if status >= 400:
        try:
            body = orjson.loads(content) if content else {}
        except orjson.JSONDecodeError:
            body = {}
        reason = str(body.get("reason") or "") if isinstance(body, dict) else ""
        message = (
            str(body.get("message") or "")
            if isinstance(body, dict)
            else content[:200].decode(errors="replace")
        )
        raise RequestFailed(status, reason, f"{method} {path}: {message}")
    if not content:
        return {}
    decoded: Object = orjson.loads(content)
    return decoded
