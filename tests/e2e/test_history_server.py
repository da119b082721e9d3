"""The History Server end to end on real Ray (issue 38's must-show): examples/ray-job.history-server.yaml on
`kuberay local up --node-mode process` (the shared `local_process`): a RayJob whose driver prints a line,
runs tasks, one of which fails, and fails; its cluster is deleted by its TTL. Then `kuberay-history-server`,
started as the README says, answers from storage alone (the cluster and its pods are gone): the job's
status, the driver's output through the logs routes, the tasks (count and the failed one) and the node;
and Ray's own dashboard frontend in headless Chromium shows the failed job (a screenshot is kept under
test-artifacts/).

One Ray cluster serves both storages: its head carries two collectors, the example's (a local directory)
and a second one writing to S3Proxy, a real S3-compatible server; a server over each answers the same.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.browser import CHROMIUM
from support.eventually import eventually
from support.history_processes import (
    ARTIFACTS,
    REPO,
    HistoryServer,
    S3Proxy,
    dashboard_shows_the_job,
    running_s3proxy,
)
from support.local_instance import EXAMPLES, KUBECTL_POLL, LocalInstance

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Ray on a loaded two-core machine: bounds, not measurements.
JOB_TIMEOUT = 420.0
BIN = str(Path(sys.executable).parent)
DEPLOY = REPO / "deploy" / "history-server"
GREETING = "history says hello from the driver"
# What Ray's job page shows of the example's job: its status, its driver's output and its task counts.
FAILED_JOB_PAGE = ("FAILED", GREETING, "Total: 5", "Failed: 1")


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Proxy]:
    with running_s3proxy(tmp_path_factory.mktemp("s3proxy")) as proxy:
        yield proxy


def _rayjob(name: str, local_dir: Path, s3_env: dict[str, str]) -> dict[str, Any]:
    (job,) = [d for d in yaml.safe_load_all((EXAMPLES / "ray-job.history-server.yaml").read_text()) if d]
    job["metadata"]["name"] = name
    containers = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]
    collector = containers[1]
    env = {e["name"]: e for e in collector["env"]}
    env["OWNER_NAME"]["value"] = name
    env["STORAGE_LOCAL_DIR"]["value"] = str(local_dir)
    to_s3 = copy.deepcopy(collector)
    to_s3["name"] = "collector-s3"
    kept = [e for e in to_s3["env"] if e["name"] not in ("STORAGE_BACKEND", "STORAGE_LOCAL_DIR")]
    # Ray exports its events to one address: this collector's event port is a spare one.
    to_s3["env"] = kept + [{"name": k, "value": v} for k, v in {**s3_env, "EVENTS_PORT": "8085"}.items()]
    containers.append(to_s3)
    return job


def _answers(server: HistoryServer, namespace: str, name: str, submission: str) -> dict[str, Any]:
    """What the server says of the job's session, from storage alone."""
    with server.client() as http:
        listed = http.get("/clusters").json()
        assert [(c["namespace"], c["ownerKind"], c["ownerName"]) for c in listed] == [
            (namespace, "rayjob", name)
        ]
        assert http.get("/api/jobs/").status_code == 400  # no session entered yet
        entered = http.get(f"/enter_cluster/{namespace}/rayjob/{name}")
        assert entered.status_code == 200, entered.text
        job = http.get(f"/api/jobs/{submission}").json()
        driver_log = http.get("/api/v0/logs/file", params={"submission_id": submission, "lines": -1}).text
        tasks = http.get("/api/v0/tasks", params={"limit": 1000}).json()["data"]["result"]
        failed = http.get(
            "/api/v0/tasks",
            params={"filter_keys": "state", "filter_predicates": "=", "filter_values": "FAILED"},
        ).json()["data"]["result"]["result"]
        nodes = http.get("/nodes", params={"view": "summary"}).json()["data"]["summary"]
        node_id = nodes[0]["raylet"]["nodeId"]
        node_logs = http.get("/api/v0/logs", params={"node_id": node_id}).json()["data"]["result"]
    return {
        "job": job,
        "driver_log": driver_log,
        "tasks": tasks,
        "failed": failed,
        "nodes": nodes,
        "node_logs": node_logs,
    }


async def test_a_failed_rayjob_is_answered_after_its_cluster_is_gone(
    local_process: LocalInstance, s3: S3Proxy, tmp_path: Path
) -> None:
    namespace = local_process.namespace("history")
    local_dir = tmp_path / "history"
    name = f"history-{uuid.uuid4().hex[:6]}"
    # The pods reach this machine (and S3Proxy) at their node's address.
    node = local_process.kubectl(
        "get", "nodes", "-o", "jsonpath={.items[0].status.addresses[?(@.type=='InternalIP')].address}"
    )
    job = _rayjob(name, local_dir, s3.env(host=node.strip()))
    local_process.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(job))

    def finished() -> dict[str, Any] | None:
        status = local_process.get("rayjob", name, namespace).get("status") or {}
        return status if status.get("jobStatus") == "FAILED" else None

    status = await eventually(finished, JOB_TIMEOUT, "the RayJob failed", every=KUBECTL_POLL)
    cluster = status["rayClusterName"]
    # The TTL deletes the cluster; its Ray pods (and the collectors, flushing on SIGTERM) go with it.
    ray_pods = ("get", "rayclusters,pods", "-n", namespace, "-l", "ray.io/node-type", "-o", "name")
    await eventually(
        lambda: not local_process.kubectl(*ray_pods).strip(),
        JOB_TIMEOUT,
        "the cluster and its pods deleted",
        every=KUBECTL_POLL,
    )

    results = {}
    for storage, env in (
        ("local", {"STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": str(local_dir)}),
        ("s3", s3.env()),
    ):
        server = HistoryServer(tmp_path / f"server-{storage}.log", env).start()
        try:
            results[storage] = answers = _answers(server, namespace, name, status["jobId"])
            if storage == "local" and CHROMIUM is not None:
                await dashboard_shows_the_job(
                    server.url, f"{namespace}/rayjob/{name}", status["jobId"], FAILED_JOB_PAGE,
                    profile=tmp_path / "profile", screenshot=ARTIFACTS / "history-server-failed-job.png",
                )  # fmt: skip
        finally:
            server.stop()
        assert answers["job"]["status"] == "FAILED"
        assert answers["job"]["submission_id"] == status["jobId"]
        assert GREETING in answers["driver_log"]
        assert "ZeroDivisionError" in answers["driver_log"]
        assert answers["tasks"]["total"] == 5  # four squares and the failing one
        assert [(t["state"], t["name"]) for t in answers["failed"]] == [("FAILED", "<lambda>")]
        assert len(answers["nodes"]) == 1 and answers["nodes"][0]["raylet"]["isHeadNode"]
        assert f"job-driver-{status['jobId']}.log" in answers["node_logs"]["internal"]
    assert results["local"]["tasks"]["total"] == results["s3"]["tasks"]["total"]
    assert cluster.startswith(name)

    # deploy/history-server/ run in the cluster (a local process here) over the same directory, reached by
    # `kubectl ray history` through a port-forward of its Service, as a user without a URL reaches it.
    _deploy_history_server(local_process, namespace, local_dir)
    try:
        listed = subprocess.run(
            ["kubectl", "ray", "history", f"rayjob/{name}", "-n", namespace, "--history-namespace", namespace],
            capture_output=True, text=True, timeout=180, check=False,
            env={**os.environ, "KUBECONFIG": local_process.kubeconfig, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        assert [line.split()[1] for line in listed.stdout.splitlines()[1:]] == [f"rayjob/{name}"], (
            listed.stdout
        )
    finally:
        local_process.kubectl(
            "delete", "clusterrole,clusterrolebinding", f"kuberay-history-server-{namespace}"
        )


def _deploy_history_server(local: LocalInstance, namespace: str, directory: Path) -> None:
    """deploy/history-server/*.yaml moved to `namespace` (cluster-scoped names suffixed with it), with its
    storage Secret naming the local directory."""
    docs = [
        d
        for f in ("rbac.yaml", "history-server.yaml")
        for d in yaml.safe_load_all((DEPLOY / f).read_text())
        if d
    ]
    for doc in docs:
        if doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            doc["metadata"]["name"] += f"-{namespace}"
        else:
            doc["metadata"]["namespace"] = namespace
        if doc["kind"] == "ClusterRoleBinding":
            doc["roleRef"]["name"] += f"-{namespace}"
            doc["subjects"][0]["namespace"] = namespace
    storage = {"STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": str(directory)}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kuberay-history-storage", "namespace": namespace},
              "stringData": storage}  # fmt: skip
    local.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [secret, *docs]})
    )
    local.kubectl("rollout", "status", "deployment/kuberay-history-server", "-n", namespace, "--timeout=180s")
