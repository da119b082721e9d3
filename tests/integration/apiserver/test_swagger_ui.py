"""Swagger UI at /swagger-ui/ in headless Chromium (Debian's `chromium`, driven over the DevTools protocol)
with no network beyond the APIServer: the page loads from the packaged files, lists the v1 services, and a
"Try it out" call of ListAllComputeTemplates answers 200."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from support.apiserver_process import ApiServerProcess

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (scripts/setup installs it as root)"
)
# The flags a closed machine needs: no background connections, no component updates, no sync.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--remote-debugging-port=0"]  # fmt: skip
OPERATION = "operations-ComputeTemplateService-ComputeTemplateService_ListAllComputeTemplates"


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
        deadline = asyncio.get_running_loop().time() + timeout
        while not (value := await self.evaluate(expression)):
            assert asyncio.get_running_loop().time() < deadline, f"{expression} stayed falsy"
            await asyncio.sleep(0.2)
        return value


@pytest.fixture
async def page(tmp_path: Path) -> AsyncIterator[Page]:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    browser = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        port_file = profile / "DevToolsActivePort"
        for _ in range(300):
            if port_file.exists() and port_file.read_text().count("\n") >= 1:
                break
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        async with httpx.AsyncClient() as http:
            targets = (await http.get(f"http://127.0.0.1:{port}/json/list")).json()
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with websockets.connect(url, max_size=None) as socket:
            yield Page(socket)
    finally:
        browser.terminate()
        browser.wait(30)


async def test_swagger_ui_lists_services_and_tries_a_call(page: Page, apiserver: ApiServerProcess) -> None:
    await page.send("Page.enable")
    await page.send("Page.navigate", url=f"{apiserver.url}/swagger-ui/")
    tags = await page.until(
        "[...document.querySelectorAll('.opblock-tag')].map(e => e.dataset.tag).join(',')"
    )
    assert set(tags.split(",")) >= {"ClusterService", "ComputeTemplateService", "RayJobService", "RayServeService",
                                    "RayJobSubmissionService"}  # fmt: skip
    # Everything the page loaded came from the APIServer: no CDN, no validator.
    loaded = await page.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(name.startswith(apiserver.url) for name in loaded), loaded

    await page.evaluate(f"document.querySelector('#{OPERATION} .opblock-summary-control').click()")
    await page.until(f"!!document.querySelector('#{OPERATION} .try-out__btn')")
    await page.evaluate(f"document.querySelector('#{OPERATION} .try-out__btn').click()")
    await page.until(f"!!document.querySelector('#{OPERATION} .execute')")
    await page.evaluate(f"document.querySelector('#{OPERATION} .execute').click()")
    status = await page.until(
        f"document.querySelector('#{OPERATION} .live-responses-table tbody .response-col_status')?.textContent"
    )
    assert status.strip() == "200"
