import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kuberay.local.ports import free_port
from kuberay.rayclient.dashboard import (
    DashboardClient,
    DashboardError,
    DashboardTimeout,
    JobInfo,
    JobNotFound,
    JobSubmitRequest,
    ServeDetails,
    SubmissionIdInUse,
)
from kuberay.rayclient.serveproxy import check_proxy_health, direct_health_url
from support.eventually import eventually
from support.ray_process import RayHead

SERVE_APPS = Path(__file__).parent / "serveapps"


@pytest.fixture
async def client(ray_head: RayHead) -> AsyncIterator[DashboardClient]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield DashboardClient(http, ray_head.dashboard_url)


@pytest.fixture
async def serve_client(ray_head: RayHead) -> AsyncIterator[DashboardClient]:
    # The first deployment starts Serve's controller inside the request: slow on a loaded machine.
    async with httpx.AsyncClient(timeout=180) as http:
        yield DashboardClient(http, ray_head.dashboard_url)


async def _until_terminal(client: DashboardClient, job_id: str, timeout: float = 90) -> JobInfo:
    async def terminal() -> JobInfo | None:
        info = await client.get_job_info(job_id)
        return info if info.terminal else None

    info: JobInfo = await eventually(terminal, timeout, f"job {job_id} terminal", every=0.5)
    return info


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


async def test_a_running_job_is_not_deleted_then_stop_then_delete(client: DashboardClient) -> None:
    job_id = await client.submit_job(JobSubmitRequest(entrypoint="sleep 600", submission_id=_new_id()))
    with pytest.raises(
        DashboardError,
        match=f"^DeleteJob fail: 500 Internal Server Error RuntimeError: Attempted to delete job '{job_id}', but it is in a non-terminal state",
    ):
        await client.delete_job(job_id)
    assert not (await client.get_job_info(job_id)).terminal
    await client.stop_job(job_id)
    assert (await _until_terminal(client, job_id)).status == "STOPPED"
    await client.delete_job(job_id)
    with pytest.raises(JobNotFound, match=f"Job {job_id} does not exist on the cluster"):
        await client.get_job_info(job_id)
    await client.delete_job(job_id)  # already gone: nothing to do


async def test_missing_job(client: DashboardClient) -> None:
    with pytest.raises(JobNotFound):
        await client.get_job_info("no-such-job")
    assert await client.get_job_logs("no-such-job") == ""


def _serve_config(http_port: int, *apps: dict[str, Any]) -> dict[str, Any]:
    return {
        "http_options": {"host": "127.0.0.1", "port": http_port},
        "applications": [
            {"runtime_env": {"env_vars": {"PYTHONPATH": str(SERVE_APPS), "KUBERAY_ECHO_TAG": "t"}}, **app}
            for app in apps
        ],
    }


async def _until_settled(client: DashboardClient, timeout: float = 180) -> ServeDetails:
    async def settled() -> ServeDetails | None:
        details = await client.get_serve_details()
        statuses = {app.status for app in details.applications.values()}
        return (
            details
            if details.applications and statuses <= {"RUNNING", "DEPLOY_FAILED", "UNHEALTHY"}
            else None
        )

    details: ServeDetails = await eventually(settled, timeout, "the Serve applications settled", every=1)
    return details


async def test_serve_deploy_status_and_proxy_health(serve_client: DashboardClient) -> None:
    client = serve_client
    port = free_port()
    echo = {
        "name": "echo",
        "route_prefix": "/echo",
        "import_path": "kuberay_echo:app",
        "args": {"greeting": "hi"},
    }
    broken = {"name": "broken", "route_prefix": "/broken", "import_path": "kuberay_no_such_module:app"}
    await client.update_serve_applications(_serve_config(port, echo, broken))
    try:
        details = await _until_settled(client)
        assert set(details.applications) == {"echo", "broken"}
        running = details.applications["echo"]
        assert running.status == "RUNNING"
        assert {(d.name, d.status) for d in running.deployments.values()} == {("Echo", "HEALTHY")}
        failed = details.applications["broken"]
        assert failed.status == "DEPLOY_FAILED"
        assert "kuberay_no_such_module" in failed.message
        async with httpx.AsyncClient(timeout=10) as http:
            await check_proxy_health(http, direct_health_url("127.0.0.1", port))
            assert (await http.get(f"http://127.0.0.1:{port}/echo")).text == "hi t"
            with pytest.raises(DashboardError, match="CheckProxyActorHealth fails. status code: 404"):
                await check_proxy_health(http, f"http://127.0.0.1:{port}/no-such-route")
    finally:
        await client.update_serve_applications({"applications": []})


async def test_serve_api_errors_carry_the_status_line(serve_client: DashboardClient) -> None:
    with pytest.raises(DashboardError, match=r"^UpdateDeployments fail: 400 "):
        await serve_client.update_serve_applications({"applications": "not a list"})


@pytest.mark.parametrize("url", ["http://head-svc:dashboard", "://invalid-url"])
async def test_an_unparsable_dashboard_url_is_upstreams_error(url: str) -> None:
    # A connection tried would fail with the transport's error instead: this one comes from parsing.
    async with httpx.AsyncClient(timeout=1) as http:
        with pytest.raises(DashboardError, match="^failed to parse dashboard URL: "):
            await DashboardClient(http, url).get_serve_details()


async def test_unreachable_dashboard_is_a_dashboard_error() -> None:
    async with httpx.AsyncClient(timeout=1) as http:
        with pytest.raises(DashboardError) as caught:
            await DashboardClient(http, "http://127.0.0.1:9").get_job_info("x")
    assert not isinstance(caught.value, DashboardTimeout)


async def test_a_deadline_is_a_timeout_the_caller_can_tell_apart() -> None:
    # A listening socket that never accepts: the connection is made by the kernel, the answer never comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        async with httpx.AsyncClient(timeout=0.5) as http:
            with pytest.raises(DashboardTimeout):
                await DashboardClient(http, url).get_serve_details()
            with pytest.raises(TimeoutError):
                await check_proxy_health(http, direct_health_url("127.0.0.1", silent.getsockname()[1]))
