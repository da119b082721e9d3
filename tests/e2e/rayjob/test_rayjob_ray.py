"""RayJob behaviours on one shared real Ray head, cheaper than a Ray cluster per test (the examples run on
real clusters through `kuberay local up` in `test_examples_run.py`): localkube in simulate mode pins the
simulated head pod to 127.0.0.1 (`localkube.io/pod-ip`), where the test's Ray head listens, and an
in-process operator reaches its dashboard through the API server's service proxy (`--use-kubernetes-proxy`).

The RayJob is examples/ray-job.http-mode.yaml, its `python` made this interpreter (which has Ray): `python`
on the Ray head's PATH need not be the one Ray is installed in.
"""

from __future__ import annotations

import copy
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from integration.rayjob.harness import Operator, operator
from kuberay.rayclient.dashboard import DashboardClient, JobSubmitRequest
from kuberay.rayresources import RAYJOB
from support.ray_process import RayHead

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ray-job.http-mode.yaml"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    (rayjob,) = [doc for doc in yaml.safe_load_all(EXAMPLE.read_text()) if doc]
    entrypoint: str = rayjob["spec"]["entrypoint"]
    rayjob["spec"]["entrypoint"] = f"{sys.executable}{entrypoint.removeprefix('python')}"
    for cleanup in ("shutdownAfterJobFinishes", "ttlSecondsAfterFinished"):  # each test sets its own
        del rayjob["spec"][cleanup]
    return rayjob


def on_ray_head(
    sample: dict[str, Any], ray_head: RayHead, namespace: str, name: str, **spec: Any
) -> dict[str, Any]:
    """The sample as a RayJob whose (simulated) head pod is the test's Ray head."""
    job = copy.deepcopy(sample)
    job["metadata"] = {"name": name, "namespace": namespace}
    cluster = job["spec"]["rayClusterSpec"]
    head = cluster["headGroupSpec"]["template"]
    head["metadata"] = {"annotations": {"localkube.io/pod-ip": "127.0.0.1"}}
    ray = head["spec"]["containers"][0]
    ray["ports"] = [{"name": "dashboard", "containerPort": ray_head.dashboard_port}]
    for group in cluster["workerGroupSpecs"]:
        group["replicas"] = group["minReplicas"] = 0  # the head does the work; no worker pods to simulate
    job["spec"].update(spec)
    return job


async def test_a_failing_entrypoint_ends_failed_with_rays_message_after_its_retries(
    localkube, ray_head, sample
):
    async with operator(localkube, use_kubernetes_proxy=True) as op:
        job = on_ray_head(sample, ray_head, op.namespace, "fails", submissionMode="HTTPMode", backoffLimit=1,
                          entrypoint="python -c \"import sys; print('boom'); sys.exit(3)\"")  # fmt: skip
        await op.create(job)
        failed = await op.wait_status("fails", jobDeploymentStatus="Failed", failed=2, timeout=120)
        status = failed["status"]
        assert (status["jobStatus"], status["reason"]) == ("FAILED", "AppFailed")
        assert status["message"].startswith("Job entrypoint command failed with exit code 3")
        assert (
            len({e["message"] for e in await op.events("CreatedRayCluster")}) == 2
        )  # one cluster per attempt


async def test_on_success_delete_self_removes_the_rayjob(localkube, ray_head, sample):
    async with operator(localkube, use_kubernetes_proxy=True) as op:
        # The legacy policies win over shutdownAfterJobFinishes and wait ttlSecondsAfterFinished.
        strategy = {"onSuccess": {"policy": "DeleteSelf"}, "onFailure": {"policy": "DeleteCluster"}}
        job = on_ray_head(sample, ray_head, op.namespace, "selfish", submissionMode="HTTPMode",
                          deletionStrategy=strategy, shutdownAfterJobFinishes=True,
                          ttlSecondsAfterFinished=3)  # fmt: skip
        await op.create(job)
        await op.wait_status("selfish", jobDeploymentStatus="Complete", timeout=120)
        await op.wait(lambda: _no_rayjob(op, "selfish"), timeout=30)


async def test_deleting_a_running_rayjob_stops_its_ray_job(localkube, ray_head, sample):
    async with operator(localkube, use_kubernetes_proxy=True) as op:
        job = on_ray_head(sample, ray_head, op.namespace, "stopme", submissionMode="HTTPMode",
                          entrypoint=f"{sys.executable} -c 'import time; time.sleep(120)'")  # fmt: skip
        await op.create(job)
        running = await op.wait_status("stopme", jobStatus="RUNNING", timeout=90)
        await op.client.delete(RAYJOB, "stopme", op.namespace)
        await op.wait(lambda: _no_rayjob(op, "stopme"), timeout=30)
        async with httpx.AsyncClient(timeout=10) as http:
            dashboard = DashboardClient(http, ray_head.dashboard_url)

            async def stopped() -> bool:
                return (await dashboard.get_job_info(running["status"]["jobId"])).status == "STOPPED"

            await op.wait(stopped, timeout=30)  # Ray stops a job asynchronously after answering the request


async def test_interactive_mode_waits_for_the_users_job_id(localkube, ray_head, sample):
    async with operator(localkube, use_kubernetes_proxy=True) as op:
        await op.create(on_ray_head(sample, ray_head, op.namespace, "chat", submissionMode="InteractiveMode"))
        await op.wait_status("chat", jobDeploymentStatus="Waiting", timeout=60)
        job_id = f"interactive-{uuid.uuid4().hex[:8]}"
        async with httpx.AsyncClient(timeout=10) as http:
            await DashboardClient(http, ray_head.dashboard_url).submit_job(
                JobSubmitRequest(entrypoint="python -c 'print(42)'", submission_id=job_id)
            )
        await op.client.patch(RAYJOB, "chat", {"spec": {"jobId": job_id}}, op.namespace)
        done = await op.wait_status("chat", jobDeploymentStatus="Complete", timeout=120)
        assert (done["status"]["jobId"], done["status"]["jobStatus"]) == (job_id, "SUCCEEDED")


async def _no_rayjob(op: Operator, name: str) -> bool:
    return await op.rayjob(name) is None
