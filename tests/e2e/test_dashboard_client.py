import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from kuberay.rayclient.dashboard import (
    DashboardClient,
    DashboardError,
    JobInfo,
    JobNotFound,
    JobSubmitRequest,
    SubmissionIdInUse,
)
from ray_process import RayHead


@pytest.fixture
async def client(ray_head: RayHead) -> AsyncIterator[DashboardClient]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield DashboardClient(http, ray_head.dashboard_url)


async def _until_terminal(client: DashboardClient, job_id: str, timeout: float = 90) -> JobInfo:
    async with asyncio.timeout(timeout):
        while True:
            info = await client.get_job_info(job_id)
            if info.terminal:
                return info
            await asyncio.sleep(0.5)


def _new_id() -> str:
    return f"kuberay-test-{uuid.uuid4().hex[:8]}"


async def test_submit_poll_logs_and_duplicate_id(client: DashboardClient) -> None:
    job_id = _new_id()
    request = JobSubmitRequest(
        entrypoint="python -c \"import os; print('hello', os.environ['GREETING'])\"",
        submission_id=job_id,
        runtime_env={"env_vars": {"GREETING": "kuberay"}},
        metadata={"owner": "tests"},
    )
    assert await client.submit_job(request) == job_id
    info = await _until_terminal(client, job_id)
    assert (info.status, info.submission_id, info.driver_exit_code) == ("SUCCEEDED", job_id, 0)
    assert info.metadata == {"owner": "tests"}
    assert info.start_time is not None and info.end_time is not None and info.end_time >= info.start_time
    assert "hello kuberay" in await client.get_job_logs(job_id)
    assert job_id in [job.submission_id for job in await client.list_jobs()]
    with pytest.raises(SubmissionIdInUse, match=f"submission ID '{job_id}' already used"):
        await client.submit_job(request)


async def test_failing_entrypoint_reports_rays_message(client: DashboardClient) -> None:
    job_id = await client.submit_job(
        JobSubmitRequest(entrypoint="python -c 'import sys; sys.exit(3)'", submission_id=_new_id())
    )
    info = await _until_terminal(client, job_id)
    assert info.status == "FAILED"
    assert info.error_type == "JOB_ENTRYPOINT_COMMAND_ERROR"
    assert "exit code 3" in info.message


async def test_stop_then_delete(client: DashboardClient) -> None:
    job_id = await client.submit_job(JobSubmitRequest(entrypoint="sleep 600", submission_id=_new_id()))
    await client.stop_job(job_id)
    assert (await _until_terminal(client, job_id)).status == "STOPPED"
    await client.delete_job(job_id)
    with pytest.raises(JobNotFound, match=f"Job {job_id} does not exist on the cluster"):
        await client.get_job_info(job_id)


async def test_missing_job(client: DashboardClient) -> None:
    with pytest.raises(JobNotFound):
        await client.get_job_info("no-such-job")
    assert await client.get_job_logs("no-such-job") == ""


async def test_serve_api_errors_carry_the_status_line(client: DashboardClient) -> None:
    # ray[serve] is not installed in the test environment, so the dashboard answers 501.
    with pytest.raises(DashboardError, match=r"^GetServeDetails fail: 501 "):
        await client.get_serve_applications()


async def test_unreachable_dashboard_is_a_dashboard_error() -> None:
    async with httpx.AsyncClient(timeout=1) as http:
        with pytest.raises(DashboardError):
            await DashboardClient(http, "http://127.0.0.1:9").get_job_info("x")
