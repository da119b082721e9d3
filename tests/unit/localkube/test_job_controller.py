import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from localkube.controllers.api import ControllerApi
from localkube.controllers.garbagecollector import GarbageCollector
from localkube.controllers.job import JobController
from localkube.controllers.runner import Runner
from localkube.controllers.scheduler import Scheduler
from localkube.node.kubelet import NodeOptions, SimulatedKubelet
from localkube.server.registry import Registry
from localkube.server.rest import SYSTEM_NAMESPACES, Resources
from localkube.storage import Store

JOB_KEY = "/registry/batch/jobs/default/"


@pytest.fixture
async def resources(tmp_path: Path) -> AsyncIterator[Resources]:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    api = ControllerApi(resources)
    kubelet = SimulatedKubelet(store, NodeOptions())
    kubelet.register(lambda node: api.create("", "nodes", None, node))
    runner = Runner(
        store, [Scheduler(store), kubelet, JobController(store, api), GarbageCollector(store, api)]
    )
    await runner.start()
    yield resources
    await runner.stop()
    store.close()


def _create_job(resources: Resources, name: str, fault: str | None = None, **spec: Any) -> None:
    annotations = {"localkube.io/simulate": fault} if fault else {}
    template = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }
    job = {"metadata": {"name": name}, "spec": {"template": template, **spec}}
    resources.create(resources.registry.by_resource("batch", "jobs"), "default", job, {})


async def _until(
    resources: Resources, name: str, check: Callable[[dict[str, Any] | None], bool]
) -> dict[str, Any] | None:
    async with asyncio.timeout(15):
        while not check(job := resources.store.get(JOB_KEY + name)):
            await asyncio.sleep(0.05)
    return job


def _condition(kind: str) -> Callable[[dict[str, Any] | None], bool]:
    def check(job: dict[str, Any] | None) -> bool:
        conditions = ((job or {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == kind and c["status"] == "True" for c in conditions)

    return check


def _pods(resources: Resources, job: str) -> list[dict[str, Any]]:
    pods = resources.store.list("/registry/core/pods/default/")[0]
    return [p for p in pods if p["metadata"]["labels"].get("job-name") == job]


async def test_a_job_runs_its_pod_to_completion(resources: Resources) -> None:
    _create_job(resources, "ok")
    job = await _until(resources, "ok", _condition("Complete"))
    assert job is not None
    assert job["status"]["succeeded"] == 1 and "failed" not in job["status"]
    assert {c["type"] for c in job["status"]["conditions"]} == {"SuccessCriteriaMet", "Complete"}
    (pod,) = _pods(resources, "ok")
    assert pod["metadata"]["name"].startswith("ok-")
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"


async def test_failing_pods_are_retried_up_to_the_backoff_limit(resources: Resources) -> None:
    _create_job(resources, "bad", fault="Exit:3", backoffLimit=2)
    job = await _until(resources, "bad", _condition("Failed"))
    assert job is not None
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 3
    assert len(_pods(resources, "bad")) == 3


async def test_active_deadline_fails_the_job(resources: Resources) -> None:
    _create_job(resources, "slow", fault="Delay:60", activeDeadlineSeconds=1)
    job = await _until(resources, "slow", _condition("Failed"))
    assert job is not None
    assert (
        next(c for c in job["status"]["conditions"] if c["type"] == "Failed")["reason"] == "DeadlineExceeded"
    )


async def test_ttl_after_finished_deletes_the_job_and_its_pods(resources: Resources) -> None:
    _create_job(resources, "short", ttlSecondsAfterFinished=0)
    await _until(resources, "short", lambda job: job is None)
    async with asyncio.timeout(10):
        while _pods(resources, "short"):
            await asyncio.sleep(0.05)
