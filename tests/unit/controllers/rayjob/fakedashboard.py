"""A Ray dashboard's Jobs API on an httpx transport, for the poller's and the RayJob passes' tests.

It is a fake, and says so: it keeps each submitted job's status, set by the test, and answers as Ray 2.60
does (404 in text/plain for an unknown job); the integration tier drives real HTTP and the e2e tier real Ray.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import httpx

from kuberay.controllers.rayjob.poller import JobStatusPoller


class FakeDashboard:
    """The Jobs API's answers as Ray 2.60 gives them (404 in text/plain for an unknown job)."""

    def __init__(self) -> None:
        self.jobs: dict[str, str] = {}
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None
        self.refuse_submissions = False
        self.in_flight = self.most_in_flight = 0

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(f"{request.method} {request.url.path}")
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if request.method == "POST" and self.refuse_submissions:
                return httpx.Response(500, text="Internal Server Error")
            if request.method == "POST":
                body = json.loads(request.content)
                self.jobs[body["submission_id"]] = "PENDING"
                return httpx.Response(200, json={"job_id": body["submission_id"]})
            job_id = request.url.path.rsplit("/", 1)[1]
            if job_id not in self.jobs:
                return httpx.Response(404, text=f"Job {job_id} does not exist")
            return httpx.Response(200, json={"submission_id": job_id, "status": self.jobs[job_id]})
        finally:
            self.in_flight -= 1


@contextlib.asynccontextmanager
async def running(poller: JobStatusPoller) -> AsyncIterator[None]:
    task = asyncio.create_task(poller.run())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
