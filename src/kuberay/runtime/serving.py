"""A tiny HTTP/1.1 server for the process's own endpoints: `/metrics`, `/healthz`, `/readyz`, and the
admission webhook (over TLS).

Each route is a function of the request returning (status, content type, body), or a coroutine function (a
mutating webhook that reads the cluster before it answers), evaluated per request. A
server answers the methods it is made for (GET and HEAD by default) and one request per connection; that is
all Prometheus, kubelet probes and an API server calling a webhook need, and it keeps a web framework (and
its signal handling) out of the operator process. Request bodies are read up to `MAX_BODY` bytes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus

log = logging.getLogger(__name__)

# An AdmissionReview carries two copies of an object; kube-apiserver's own request limit is 3 MiB.
MAX_BODY = 8 * 1024 * 1024


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)  # by lower-case name
    body: bytes = b""


Reply = tuple[int, str, bytes]
Route = Callable[[HttpRequest], Reply | Awaitable[Reply]]


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """Go's bind syntax: ":8080" is every interface; "0" disables the endpoint (controller-runtime)."""
    if address in ("0", ""):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid bind address {address!r}: expected [host]:port")
    return (host.strip("[]") or "0.0.0.0", int(port))


class EndpointServer:
    def __init__(self, routes: Mapping[str, Route], methods: Collection[str] = ("GET", "HEAD")) -> None:
        self._routes = dict(routes)
        self._methods = frozenset(methods)
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> None:
        self._server = await asyncio.start_server(self._serve, host, port, ssl=tls)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(_read(reader), 10)
            route = self._routes.get(request.path)
            if request.method not in self._methods:
                status, content_type, body = 405, "text/plain", b"method not allowed\n"
            elif route is None:
                status, content_type, body = 404, "text/plain", b"404 page not found\n"
            else:
                answered = route(request)
                status, content_type, body = await answered if inspect.isawaitable(answered) else answered
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + (b"" if request.method == "HEAD" else body))
            await writer.drain()
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            ConnectionError,
            ssl.SSLError,
            ValueError,
        ):
            pass
        except Exception:
            log.exception("endpoint request failed")
        finally:
            writer.close()


async def _read(reader: asyncio.StreamReader) -> HttpRequest:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    request_line, *lines = head.split("\r\n")
    method, _, rest = request_line.partition(" ")
    path = rest.partition(" ")[0].partition("?")[0]
    headers = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    if length < 0 or length > MAX_BODY:
        raise ValueError(f"request body of {length} bytes")
    body = await reader.readexactly(length) if length else b""
    return HttpRequest(method, path, headers, body)
