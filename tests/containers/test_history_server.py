"""The History Server chart on real containers (issue 47): examples/ray-job.history-server.yaml with its
collector writing to S3 (S3Proxy, a real S3-compatible server on this machine, which pods reach at the host's
address on the node's link); the job fails and its TTL deletes the cluster. Then `helm install` of
helm-chart/kuberay-history-server over the same bucket, with its defaults (image `kuberay-history-server`,
which carries Ray's dashboard frontend) and the storage's credentials in a Secret, as a platform team installs
it. Reached through its Service: its routes answer from storage alone, `kubectl ray history` lists the job,
and Ray's dashboard in headless Chromium shows the failed job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from containers.cluster import NEEDS_ROOT, Cluster
from support.browser import CHROMIUM
from support.containerkube import HOST_ADDRESS
from support.helm import CHARTS, Helm
from support.history_processes import ARTIFACTS, S3Proxy, dashboard_shows_the_job, running_s3proxy

pytestmark = [NEEDS_ROOT, pytest.mark.containers, pytest.mark.slow, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
JOB = "history-demo"  # the example's name, which its collector's OWNER_NAME says too
STORAGE_SECRET = "history-storage"
# What Ray's job page shows of the example's job: its status, its driver's output and its task counts.
FAILED_JOB_PAGE = ("FAILED", "history says hello from the driver", "Total: 5", "Failed: 1")


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Proxy]:
    with running_s3proxy(tmp_path_factory.mktemp("s3proxy")) as proxy:
        yield proxy


def _rayjob_to_s3() -> dict[str, Any]:
    """The example, its collector's storage switched from a local directory to the Secret's bucket."""
    (job,) = [
        d for d in yaml.safe_load_all((REPO / "examples" / "ray-job.history-server.yaml").read_text()) if d
    ]
    containers = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]
    (collector,) = [c for c in containers if c["name"] == "collector"]
    collector["env"] = [
        e for e in collector["env"] if e["name"] not in ("STORAGE_BACKEND", "STORAGE_LOCAL_DIR")
    ]
    collector["envFrom"] = [{"secretRef": {"name": STORAGE_SECRET}}]
    result: dict[str, Any] = job
    return result


def test_the_history_server_chart_shows_a_failed_rayjob_after_its_cluster_is_gone(
    cluster: Cluster, operator: None, helm: Helm, namespace: str, s3: S3Proxy, tmp_path: Path
) -> None:
    literals = [f"--from-literal={k}={v}" for k, v in s3.env(host=HOST_ADDRESS).items()]
    cluster.kubectl("create", "secret", "generic", STORAGE_SECRET, "-n", namespace, *literals)
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(_rayjob_to_s3()))

    def failed() -> dict[str, Any] | None:
        status = cluster.get("rayjob", JOB, namespace).get("status", {})
        return status if status.get("jobStatus") == "FAILED" else None

    status: dict[str, Any] = cluster.wait_for(failed, "the RayJob failed")
    # Its TTL deletes the cluster; the head's collector, on SIGTERM, puts what it has left.
    cluster.wait_for(
        lambda: not cluster.items("rayclusters", namespace) and not cluster.items("pods", namespace, "-l", "ray.io/node-type"),
        "the cluster and its pods deleted",
    )  # fmt: skip

    helm.run(
        "install", "kuberay-history-server", str(CHARTS / "kuberay-history-server"), "--namespace", namespace,
        "--set", f"storage.existingSecret={STORAGE_SECRET}", "--wait", "--timeout", "10m",
        kubeconfig=cluster.kubeconfig, timeout=660,
    )  # fmt: skip
    try:
        with cluster.port_forward(namespace, "svc/kuberay-history-server", 8080) as port:
            url = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=url, timeout=30) as http:
                listed = http.get("/clusters").json()
                assert [(c["namespace"], c["ownerKind"], c["ownerName"]) for c in listed] == [
                    (namespace, "rayjob", JOB)
                ], listed
                assert http.get(f"/enter_cluster/{namespace}/rayjob/{JOB}").status_code == 200
                job = http.get(f"/api/jobs/{status['jobId']}").json()
                assert (job["status"], job["submission_id"]) == ("FAILED", status["jobId"]), job
                failed_tasks = http.get(
                    "/api/v0/tasks",
                    params={"filter_keys": "state", "filter_predicates": "=", "filter_values": "FAILED"},
                ).json()["data"]["result"]["result"]
                assert [t["name"] for t in failed_tasks] == ["<lambda>"], failed_tasks
            if CHROMIUM is not None:
                asyncio.run(
                    dashboard_shows_the_job(
                        url, f"{namespace}/rayjob/{JOB}", status["jobId"], FAILED_JOB_PAGE,
                        profile=tmp_path / "profile", screenshot=ARTIFACTS / "history-server-chart-failed-job.png",
                    )
                )  # fmt: skip
        # `kubectl ray history` finds the server by its Service and reaches it through a port-forward.
        listed_by_plugin = cluster.kubectl(
            "ray", "history", f"rayjob/{JOB}", "-n", namespace, "--history-namespace", namespace, timeout=180
        )
        assert [line.split()[1] for line in listed_by_plugin.splitlines()[1:]] == [f"rayjob/{JOB}"], (
            listed_by_plugin
        )
    finally:
        helm.run(
            "uninstall", "kuberay-history-server", "--namespace", namespace, kubeconfig=cluster.kubeconfig, check=False
        )  # fmt: skip
