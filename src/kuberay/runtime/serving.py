"""A tiny HTTP/1.1 server for the process's plain endpoints: `/metrics`, `/healthz`, `/readyz`.

Each route is a function returning (status, content type, body), evaluated per request. Only GET and
HEAD are served, one request per connection; that is all Prometheus and kubelet probes need, and it keeps
a web framework (and its signal handling) out of the operator process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from http import HTTPStatus

log = logging.getLogger(__name__)

Route = Callable[[], tuple[int, str, bytes]]


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """Go's bind syntax: ":8080" is every interface; "0" disables the endpoint (controller-runtime)."""
    if address in ("0", ""):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid bind address {address!r}: expected [host]:port")
    return (host.strip("[]") or "0.0.0.0", int(port))


class EndpointServer:
    def __init__(self, routes: Mapping[str, Route]) -> None:
        self._routes = dict(routes)
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, _, rest = request.decode("latin-1").partition(" ")
            path = rest.partition(" ")[0].partition("?")[0]
            route = self._routes.get(path)
            if method not in ("GET", "HEAD"):
                status, content_type, body = 405, "text/plain", b"method not allowed\n"
            elif route is None:
                status, content_type, body = 404, "text/plain", b"404 page not found\n"
            else:
                status, content_type, body = route()
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        except Exception:
            log.exception("endpoint request failed")
        finally:
            writer.close()
