"""The API server's proxy subresources: services/proxy and pods/proxy.

    /api/v1/namespaces/{ns}/services/[{scheme}:]{name}[:{port}]/proxy/{path...}
    /api/v1/namespaces/{ns}/pods/[{scheme}:]{name}[:{port}]/proxy/{path...}

A service's port is chosen by name or number (the only port when none is given) and resolved to a ready
backing pod through the Service's Endpoints, as kube-apiserver does; a pod's port is used as given (80
when none is). The request is forwarded with its method, query and body; hop-by-hop headers and the
client's Authorization are dropped; the reply is relayed with its status and headers. Failures answer as
the real server does: 503 ServiceUnavailable with `no endpoints available for service "x"` or
`error trying to reach service: ...`.

Only addresses on this machine are ever dialled (loopback, or a pod network localkube made itself and
names in `allowed_networks`): a Service or pod whose address lies elsewhere is refused, never contacted.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from localkube.server import errors
from localkube.server.errors import ApiError
from localkube.storage import Store

TIMEOUT = 30.0
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "authorization",
        "content-length",
    }
)


@dataclass(frozen=True)
class ProxyTarget:
    kind: str  # "services" or "pods"
    namespace: str
    name: str
    scheme: str
    port: str
    path: str


def parse(path: str) -> ProxyTarget | None:
    """Recognises `/api/v1/namespaces/{ns}/{services|pods}/{name}/proxy[/...]`; the rest of the path,
    trailing slash included (the Ray dashboard routes on it), is what the pod is asked for."""
    segments = path.split("/")
    # ["", "api", "v1", "namespaces", ns, kind, spec, "proxy", ...]
    if len(segments) < 8 or segments[1:4] != ["api", "v1", "namespaces"] or segments[7] != "proxy":
        return None
    namespace, kind, spec = segments[4], segments[5], segments[6]
    if kind not in ("services", "pods") or not namespace or not spec:
        return None
    parts = spec.split(":")
    scheme = ""
    if len(parts) == 3:
        scheme, name, port = parts
    elif len(parts) == 2:
        name, port = parts
    else:
        name, port = parts[0], ""
    return ProxyTarget(kind, namespace, name, scheme or "http", port, "/" + "/".join(segments[8:]))


class Proxy:
    """Forwards proxy requests to pods (see the module docstring)."""

    def __init__(self, store: Store, allowed_networks: Iterable[str] = ()) -> None:
        self._store = store
        self._allowed = [ipaddress.ip_network(n) for n in allowed_networks]

    def allow(self, network: str) -> None:
        """Adds a pod network of this machine (a process-mode node's bridge) to what may be dialled."""
        self._allowed.append(ipaddress.ip_network(network))

    def resolve(self, target: ProxyTarget) -> str:
        """The base URL the request goes to; ApiError when there is none or it is not on this machine."""
        if target.kind == "pods":
            pod = self._store.get(f"/registry/core/pods/{target.namespace}/{target.name}")
            if pod is None:
                raise errors.not_found("pods", "", target.name)
            address = (pod.get("status") or {}).get("podIP")
            if not address:
                raise _unavailable(f'pod "{target.name}" has no IP address')
            return self._url(target.scheme, address, _pod_port(pod, target.port))
        service = self._store.get(f"/registry/core/services/{target.namespace}/{target.name}")
        if service is None:
            raise errors.not_found("services", "", target.name)
        port = _service_port(service, target.port)
        if port is None:
            raise _unavailable(f'no service port "{target.port}" found for service "{target.name}"')
        endpoints = self._store.get(f"/registry/core/endpoints/{target.namespace}/{target.name}") or {}
        for subset in endpoints.get("subsets") or []:
            number = next(
                (
                    p.get("port")
                    for p in subset.get("ports") or []
                    if p.get("name", "") == port.get("name", "")
                ),
                None,
            )
            for address in subset.get("addresses") or []:
                if number is not None:
                    return self._url(target.scheme, address["ip"], int(number))
        raise _unavailable(f'no endpoints available for service "{target.name}"')

    def _url(self, scheme: str, address: str, port: int) -> str:
        ip = ipaddress.ip_address(address)
        if not (ip.is_loopback or any(ip in network for network in self._allowed)):
            raise _unavailable(f"error trying to reach service: {address} is not an address on this machine")
        host = f"[{address}]" if ip.version == 6 else address
        return f"{scheme}://{host}:{port}"

    async def forward(
        self, target: ProxyTarget, method: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Sends the request on; returns the reply's status, headers and body."""
        url = self.resolve(target) + target.path + (f"?{query}" if query else "")
        forwarded = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            async with httpx.AsyncClient(
                timeout=TIMEOUT, verify=False
            ) as client:  # pods serve self-signed certificates
                response = await client.request(method, url, headers=forwarded, content=body)
        except httpx.HTTPError as err:
            raise _unavailable(f"error trying to reach service: {err}") from err
        reply_headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP]
        return response.status_code, reply_headers, response.content


def _unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


def _service_port(service: dict[str, Any], wanted: str) -> dict[str, Any] | None:
    ports = (service.get("spec") or {}).get("ports") or []
    if not wanted:
        return ports[0] if len(ports) == 1 else None
    for port in ports:
        if port.get("name") == wanted or str(port.get("port")) == wanted:
            return dict(port)
    return None


def _pod_port(pod: dict[str, Any], wanted: str) -> int:
    if not wanted:
        return 80
    if wanted.isdigit():
        return int(wanted)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == wanted:
                return int(port["containerPort"])
    raise _unavailable(f'no port named "{wanted}" in pod "{(pod.get("metadata") or {}).get("name")}"')
