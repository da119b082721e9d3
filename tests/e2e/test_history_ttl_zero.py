"""`ttlSecondsAfterFinished: 0` on real Ray (issue 49, item 3): a RayJob with `shutdownAfterJobFinishes: true`
whose cluster is deleted the moment its job ends, on `kuberay local up --node-mode process --history` (the
operator with the gate RayClusterHistoryServer injecting the collector, as the README tells a user). The
head's Ray container waits in its preStop hook (which process mode runs as a kubelet does, before SIGTERM)
for the collector's final snapshot, so the History Server still says the job SUCCEEDED once the cluster is
gone, and that the session is complete.

The collector polls the dashboard once an hour here: only its final snapshot can have seen the job end, so
the test does not pass by a lucky periodic snapshot taken between the job's end and the deletion."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.eventually import eventually
from support.local_instance import KUBECTL_POLL, LocalInstance

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

JOB_TIMEOUT = 420.0  # Ray on a loaded two-core machine: a bound, not a measurement
GREETING = "ttl zero says goodbye"


@pytest.fixture(scope="module")
def local_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalInstance]:
    directory = tmp_path_factory.mktemp("local") / "history"
    with LocalInstance(directory, "--node-mode", "process", "--port", "0", "--history") as local:
        yield local


def _rayjob(name: str, history_dir: str) -> dict[str, Any]:
    env = {"STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": history_dir, "RAY_COLLECTOR_POLL_INTERVAL": "1h"}
    head = {
        "name": "ray-head",
        "image": "rayproject/ray:2.52.0",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": f"python -c \"import ray; ray.init(); print(ray.get(ray.remote(lambda: '{GREETING}').remote()))\"",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 0,
            "rayClusterSpec": {
                "historyServerOptions": {
                    "collectorOptions": {
                        "image": "kuberay-history-collector:latest",
                        "env": [{"name": k, "value": v} for k, v in env.items()],
                    }
                },
                "headGroupSpec": {
                    "rayStartParams": {"object-store-memory": "100000000"},
                    "template": {"spec": {"containers": [head]}},
                },
                "workerGroupSpecs": [],
            },
        },
    }


async def test_a_rayjob_deleted_at_once_keeps_its_final_status(local_history: LocalInstance) -> None:
    status = local_history.status()
    assert status is not None
    url, history_dir = status["history_server"], status["history_dir"]
    namespace = local_history.namespace(f"ttl-{uuid.uuid4().hex[:6]}")
    name = "ttl-zero"
    local_history.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(_rayjob(name, history_dir)))

    def cluster_built() -> dict[str, Any] | None:
        cluster = (local_history.get("rayjob", name, namespace).get("status") or {}).get("rayClusterName")
        return local_history.get("raycluster", cluster, namespace) if cluster else None

    # The head container the operator built waits for the collector when it is stopped.
    cluster = await eventually(cluster_built, JOB_TIMEOUT, "the RayJob's cluster", every=KUBECTL_POLL)
    ray = json.loads(
        local_history.kubectl("get", "pods", "-n", namespace, "-l", "ray.io/node-type=head", "-o", "json")
    )["items"]
    assert ray, "no head pod"
    assert ray[0]["spec"]["containers"][0]["lifecycle"]["preStop"]["httpGet"]["path"] == "/v1/final-snapshot"

    def finished() -> dict[str, Any] | None:
        found = local_history.get("rayjob", name, namespace).get("status") or {}
        return found if found.get("jobDeploymentStatus") == "Complete" else None

    final = await eventually(finished, JOB_TIMEOUT, "the RayJob complete", every=KUBECTL_POLL)
    assert final["jobStatus"] == "SUCCEEDED", final
    ray_pods = ("get", "rayclusters,pods", "-n", namespace, "-l", "ray.io/node-type", "-o", "name")
    await eventually(
        lambda: not local_history.kubectl(*ray_pods).strip(),
        JOB_TIMEOUT,
        "the cluster deleted",
        every=KUBECTL_POLL,
    )

    with httpx.Client(base_url=url, timeout=30) as http:

        def entered() -> bool:
            return http.get(f"/enter_cluster/{namespace}/rayjob/{name}").status_code == 200

        await eventually(entered, 60, "the session listed", every=1)
        job = http.get(f"/api/jobs/{final['jobId']}")
        assert job.status_code == 200, job.text
        assert job.json()["status"] == "SUCCEEDED", job.json()
        ended = http.get("/api/history/session_end")
        assert ended.status_code == 200, ended.text
        record = ended.json()
    assert record["complete"] is True, record
    assert record["finalSnapshot"] == {"succeeded": True, "unanswered": []}
    assert record["reason"] in ("preStop", "SIGTERM")  # the hook and the collector's SIGTERM come together
    assert cluster["metadata"]["name"].startswith(name)
    assert Path(history_dir).is_dir()
