"""Helpers for the runtime's integration tests: a client for a localkube, namespaces, waiting."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from kuberay.runtime import errors
from kuberay.runtime.client import Client, load_config
from kuberay.runtime.resources import NAMESPACE, SERVICE_ACCOUNT


def client_for(localkube: Any, **kwargs: Any) -> Client:
    return Client.from_config(load_config(str(localkube.kubeconfig)), **kwargs)


async def new_namespace(client: Client) -> str:
    """A fresh namespace, returned once its `default` ServiceAccount exists: a real control plane refuses pods
    (403, "error looking up service account") until its controller-manager has made it."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    await client.create(NAMESPACE, {"metadata": {"name": name}})
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        try:
            await client.get(SERVICE_ACCOUNT, "default", name)
            return name
        except errors.NotFound:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.05)


async def eventually(
    condition: Callable[[], bool], timeout: float = 20.0, why: Callable[[], str] = str
) -> None:
    """Waits until `condition()` holds; fails the test after `timeout` seconds (a bound, not a measurement),
    with `why()` in the message."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s {why()}")
        await asyncio.sleep(0.02)


class Cable:
    """A TCP forwarder to a server that a test can unplug (dropping every connection) and plug back."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def plug(self) -> None:
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def unplug(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._connections.update((writer, upstream_writer))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.transport.abort()
                self._connections.discard(sink)

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
