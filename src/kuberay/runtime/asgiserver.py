"""uvicorn as the processes that serve ASGI apps run it (the APIServer, the History Server and its collector):
without uvicorn's signal capture, because each process stops on its own signals (the APIServer stops its gRPC
and HTTP servers together, the collector flushes first); and `serve`, which starts a server and returns once
it listens or its task has ended. The operator's own endpoints are `serving`'s, without a web framework."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn

# How often `serve` looks whether the server listens: uvicorn says so only by its `started` flag.
_STARTED_POLL_S = 0.05


class Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(server: Server, sockets: list[socket.socket] | None = None) -> asyncio.Task[None]:
    """Runs `server` in a task, returned once the server listens, or once the task has ended (failed to bind:
    awaiting it raises)."""
    task = asyncio.create_task(server.serve(sockets=sockets))
    while not server.started and not task.done():
        await asyncio.sleep(_STARTED_POLL_S)
    return task
