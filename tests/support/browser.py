"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol, for the browser tests: the
Swagger UI's and the History Server's (Ray's own dashboard frontend). `CHROMIUM` is None where it is not
installed (scripts/setup installs it as root); `chromium_page(profile)` starts one and yields its page."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count
from pathlib import Path
from typing import Any

import httpx
import websockets

from support.eventually import eventually

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags a closed machine needs: no background connections, no component updates, no sync.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--remote-debugging-port=0"]  # fmt: skip


class Page:
    def __init__(self, socket: Any) -> None:
        self._socket, self._ids = socket, count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        await self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(await self._socket.recv())
            if message.get("id") == ident:
                return dict(message.get("result") or {})

    async def evaluate(self, expression: str) -> Any:
        answer = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer.get("result", {}).get("value")

    async def until(self, expression: str, timeout: float = 60.0) -> Any:
        """Evaluates until the value is truthy; a bound on waiting for the page, not a measurement."""
        return await eventually(lambda: self.evaluate(expression), timeout, f"{expression} truthy", every=0.2)

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@asynccontextmanager
async def chromium_page(profile: Path, *extra_flags: str) -> AsyncIterator[Page]:
    assert CHROMIUM is not None
    browser = subprocess.Popen([CHROMIUM, *FLAGS, *extra_flags, f"--user-data-dir={profile}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        port_file = profile / "DevToolsActivePort"
        await eventually(
            lambda: port_file.exists() and port_file.read_text().count("\n") >= 1,
            30,
            "Chromium's DevToolsActivePort",
        )
        port = int(port_file.read_text().splitlines()[0])
        async with httpx.AsyncClient() as http:
            targets = (await http.get(f"http://127.0.0.1:{port}/json/list")).json()
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with websockets.connect(url, max_size=None) as socket:
            yield Page(socket)
    finally:
        browser.terminate()
        browser.wait(30)
