from collections.abc import Callable
from typing import Any

from localkube.server.rest import Resources
from support.eventually import eventually

JOB_KEY = "/registry/batch/jobs/default/"


def _create_job(cluster: Resources, name: str, fault: str | None = None, **spec: Any) -> None:
    annotations = {"localkube.io/simulate": fault} if fault else {}
    template = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }
    job = {"metadata": {"name": name}, "spec": {"template": template, **spec}}
    cluster.create(cluster.registry.by_resource("batch", "jobs"), "default", job, {})


async def _until(
    cluster: Resources, name: str, check: Callable[[dict[str, Any] | None], bool]
) -> dict[str, Any] | None:
    # A one-item list, so that a Job gone (None) that satisfies the check is a result too.
    found: list[dict[str, Any] | None] = await eventually(
        lambda: [job] if check(job := cluster.store.get(JOB_KEY + name)) else None, timeout=15, every=0.05
    )
    return found[0]


def _condition(kind: str) -> Callable[[dict[str, Any] | None], bool]:
    def check(job: dict[str, Any] | None) -> bool:
        conditions = ((job or {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == kind and c["status"] == "True" for c in conditions)

    return check


def _pods(cluster: Resources, job: str) -> list[dict[str, Any]]:
    pods = cluster.store.list("/registry/core/pods/default/")[0]
    return [p for p in pods if p["metadata"]["labels"].get("job-name") == job]


async def test_a_job_runs_its_pod_to_completion(cluster: Resources) -> None:
    _create_job(cluster, "ok")
    job = await _until(cluster, "ok", _condition("Complete"))
    assert job is not None
    assert job["status"]["succeeded"] == 1 and "failed" not in job["status"]
    assert {c["type"] for c in job["status"]["conditions"]} == {"SuccessCriteriaMet", "Complete"}
    (pod,) = _pods(cluster, "ok")
    assert pod["metadata"]["name"].startswith("ok-")
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"


async def test_failing_pods_are_retried_up_to_the_backoff_limit(cluster: Resources) -> None:
    _create_job(cluster, "bad", fault="Exit:3", backoffLimit=2)
    job = await _until(cluster, "bad", _condition("Failed"))
    assert job is not None
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 3
    assert len(_pods(cluster, "bad")) == 3


async def test_active_deadline_fails_the_job(cluster: Resources) -> None:
    _create_job(cluster, "slow", fault="Delay:60", activeDeadlineSeconds=1)
    job = await _until(cluster, "slow", _condition("Failed"))
    assert job is not None
    assert (
        next(c for c in job["status"]["conditions"] if c["type"] == "Failed")["reason"] == "DeadlineExceeded"
    )


async def test_ttl_after_finished_deletes_the_job_and_its_pods(cluster: Resources) -> None:
    _create_job(cluster, "short", ttlSecondsAfterFinished=0)
    await _until(cluster, "short", lambda job: job is None)
    await eventually(lambda: not _pods(cluster, "short"), 10, "the Job's pods gone", every=0.05)
