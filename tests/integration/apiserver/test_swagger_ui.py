"""Swagger UI at /swagger-ui/ in headless Chromium (Debian's `chromium`, driven over the DevTools protocol)
with no network beyond the APIServer: the page loads from the packaged files, lists the v1 services, and a
"Try it out" call of ListAllComputeTemplates answers 200."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from support.apiserver_process import ApiServerProcess
from support.browser import CHROMIUM, Page, chromium_page

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (scripts/setup installs it as root)"
)
OPERATION = "operations-ComputeTemplateService-ComputeTemplateService_ListAllComputeTemplates"


@pytest.fixture
async def page(tmp_path: Path) -> AsyncIterator[Page]:
    async with chromium_page(tmp_path / "profile") as page:
        yield page


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
