"""How a pod reaches the API server, as `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` say.

On the host network a pod dials the server where it listens. In a network namespace it cannot reach the
host's loopback, so the node forwards TCP (TLS passes through untouched) from the bridge's address, port
443 (the `kubernetes` Service's port; another free port when something on the host holds 443 on every
address), to the server; the serving certificate names the bridges' addresses for that. Its socket is
bound when the node starts (before the bridge exists: IP_FREEBIND), so its port is known from then on; it
serves from the first pod sandbox and stops with the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass

from localkube.node.volumes import IssueToken

log = logging.getLogger(__name__)

SERVICE_PORT = 443
# Linux's IP_FREEBIND (Python 3.11's socket module lacks the name): bind an address not yet configured.
_IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)


@dataclass(frozen=True)
class ApiAccess:
    """The API server as pods may use it: where it listens, its CA certificate, and how to issue tokens."""

    host: str
    port: int
    ca_cert: bytes
    issue_token: IssueToken


def service_environment(host: str, port: int) -> dict[str, str]:
    """The variables every container gets for the `kubernetes` Service."""
    url = f"tcp://{host}:{port}"
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
        "KUBERNETES_PORT": url,
        f"KUBERNETES_PORT_{port}_TCP": url,
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": str(port),
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }


class Forwarder:
    """Forwards TCP connections from `host` (port 443, else a free one) to the API server."""

    def __init__(self, api: ApiAccess, host: str) -> None:
        self._api = api
        self._socket = _bind(host)
        self.address: tuple[str, int] = (host, self._socket.getsockname()[1])
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, sock=self._socket)

    async def close(self) -> None:
        if self._server is None:
            self._socket.close()
            return
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await self._server.wait_closed()
        self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(self._api.host, self._api.port)
        except OSError as err:
            log.warning("forwarding a pod's connection to the API server failed: %s", err)
            writer.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            for w in (writer, upstream_writer):
                w.close()
            self._tasks.discard(task)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(OSError):
        writer.write_eof()


def _bind(host: str) -> socket.socket:
    for port in (SERVICE_PORT, 0):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_IP, _IP_FREEBIND, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            sock.close()
            if port == 0:
                raise
            log.warning(
                "port %d on %s is taken (%s): pods reach the API server on another port", port, host, err
            )
            continue
        sock.listen(128)
        return sock
    raise AssertionError("unreachable")
