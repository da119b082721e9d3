"""A TCP forwarder to a server that a test can unplug (dropping every connection) and plug back, or make
lose traffic first: `swallow` drops the server's answers (requests still reach the server and are carried
out, as when it dies between doing a write and answering it), `sink` drops the requests (sent, never
carried out, never answered), `hold` keeps new connections waiting unanswered (a slow network) until
`release`. Faults no real part makes on demand; the server behind the cable is real.

`Cable` runs on the test's event loop; `ThreadedCable` runs one on a loop of its own, for synchronous tests.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any


class Cable:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._swallowing = False
        self._sinking = False
        self._open = asyncio.Event()
        self._open.set()
        self.held = 0
        self.port = 0

    async def plug(self) -> None:
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def swallow(self) -> None:
        """From now until the next unplug, the server's answers are dropped."""
        self._swallowing = True

    async def sink(self) -> None:
        """From now until the next unplug, requests are dropped."""
        self._sinking = True

    async def hold(self) -> None:
        """Connections made from now on are accepted, then wait unanswered until `release` (counted in `held`)."""
        self._open.clear()

    async def release(self) -> None:
        self._open.set()

    async def unplug(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None
        self._swallowing = self._sinking = False

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self._open.is_set():
            self.held += 1
            await self._open.wait()
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._connections.update((writer, upstream_writer))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, answers: bool) -> None:
            try:
                while data := await source.read(65536):
                    if self._swallowing if answers else self._sinking:
                        continue
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.transport.abort()
                self._connections.discard(sink)

        await asyncio.gather(pipe(reader, upstream_writer, False), pipe(upstream_reader, writer, True))


class ThreadedCable:
    """A `Cable` on an event loop in a thread of its own; each method waits for the cable's answer."""

    def __init__(self, host: str, port: int) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.cable = Cable(host, port)

    def _run(self, step: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(step, self._loop).result(30)

    def plug(self) -> None:
        self._run(self.cable.plug())

    def swallow(self) -> None:
        self._run(self.cable.swallow())

    def sink(self) -> None:
        self._run(self.cable.sink())

    def unplug(self) -> None:
        self._run(self.cable.unplug())

    def close(self) -> None:
        self.unplug()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
