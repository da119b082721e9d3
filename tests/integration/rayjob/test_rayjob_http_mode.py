"""An HTTPMode RayJob whose dashboard forgets the job: the operator submits it again, a successful submission
ends the run of failed status checks (the job stays Running past the timeout), a failed one counts as a
failed check (the job fails with JobStatusCheckTimeoutExceeded), as upstream.

A real Ray head cannot be made to forget a job or to fail its checks on demand, so a scripted dashboard
(`ScriptedDashboard`, answering only the two Jobs API calls involved) stands in for it. It listens on
127.0.0.1, where localkube in simulate mode pins the head pod (`localkube.io/pod-ip`), and the operator
reaches it through the API server's service proxy, as it would reach a real head.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from integration.rayjob.harness import Operator, cluster_spec, operator, rayjob

# RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: short where the job should fail; long enough where the test must see the
# failure timer and change the dashboard's answer before the job would fail (a loaded machine is slow to look).
SHORT_TIMEOUT_SECONDS = 3
LONG_TIMEOUT_SECONDS = 20


class ScriptedDashboard:
    """`GET /api/jobs/<id>` answers `check` (500 or 404, never job info); `POST /api/jobs/` answers `submit`
    (200 or 500)."""

    def __init__(self) -> None:
        self.check = 500
        self.submit = 200
        self.submissions = 0
        dashboard = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                # Ray answers a failure in text, which is no job info; an unknown job is a 404.
                self._answer(dashboard.check, b"Internal Server Error")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                dashboard.submissions += 1
                job_id = body.get("submission_id", "")
                accepted = json.dumps({"job_id": job_id, "submission_id": job_id}).encode()
                self._answer(
                    dashboard.submit, accepted if dashboard.submit == 200 else b"Internal Server Error"
                )

            def _answer(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json" if code == 200 else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@pytest.fixture
def dashboard() -> Iterator[ScriptedDashboard]:
    scripted = ScriptedDashboard()
    thread = threading.Thread(target=scripted.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield scripted
    finally:
        scripted.server.shutdown()
        scripted.server.server_close()
        thread.join(10)


def job_on(dashboard: ScriptedDashboard, namespace: str) -> dict[str, Any]:
    spec = cluster_spec(head_annotations={"localkube.io/pod-ip": "127.0.0.1"})
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [{"name": "dashboard", "containerPort": dashboard.port}]
    return rayjob(namespace, cluster=spec, submissionMode="HTTPMode")


def http_mode_operator(localkube: Any, check_timeout: int) -> Any:
    return operator(
        localkube,
        environ={"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": str(check_timeout)},
        use_kubernetes_proxy=True,
    )


async def failure_timer(op: Operator) -> str | None:
    job = await op.rayjob()
    return ((job or {}).get("status") or {}).get("jobStatusCheckFailureStartTime")


async def test_a_successful_resubmission_clears_the_failure_timer_and_the_job_stays_running(
    localkube: Any, dashboard: ScriptedDashboard
) -> None:
    async with http_mode_operator(localkube, LONG_TIMEOUT_SECONDS) as op:
        await op.create(job_on(dashboard, op.namespace))
        await op.wait(lambda: failure_timer(op), timeout=90)  # the dashboard answers 500: checks fail
        dashboard.check = 404  # now it does not know the job, and accepts it again each time

        async def cleared() -> bool:
            return dashboard.submissions > 0 and await failure_timer(op) is None

        await op.wait(cleared, timeout=60)
        # Keep forgetting well past the timeout: every successful submission keeps the job alive.
        seen = dashboard.submissions
        past_timeout = asyncio.get_running_loop().time() + LONG_TIMEOUT_SECONDS + 2
        await op.wait(
            lambda: _true(
                dashboard.submissions >= seen + 3 and asyncio.get_running_loop().time() > past_timeout
            ),
            timeout=120,
        )
        status = (await op.rayjob())["status"]
        assert status["jobDeploymentStatus"] == "Running", status
        assert "jobStatusCheckFailureStartTime" not in status


async def test_a_failed_resubmission_is_a_failed_check_until_the_timeout(
    localkube: Any, dashboard: ScriptedDashboard
) -> None:
    dashboard.check, dashboard.submit = 404, 500
    async with http_mode_operator(localkube, SHORT_TIMEOUT_SECONDS) as op:
        await op.create(job_on(dashboard, op.namespace))
        failed = await op.wait_status(jobDeploymentStatus="Failed", timeout=90)
        assert failed["status"]["reason"] == "JobStatusCheckTimeoutExceeded"
        assert dashboard.submissions >= 1


async def _true(value: bool) -> bool:
    return value
