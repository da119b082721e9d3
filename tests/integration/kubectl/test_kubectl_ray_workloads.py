"""`kubectl ray get job|service` and `log job NAME` through the real kubectl, on the README's example RayJob and
RayService as the operator runs them in simulate mode: the columns read the status the operator wrote, and
the two-word `log`/`session` forms find the resource's cluster."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import yaml

from integration.kubectl import tables
from integration.kubectl.conftest import RayCli, run_plugin
from support.eventually import eventually
from support.local_instance import EXAMPLES
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

# After NAME and NAMESPACE, the CRDs' printer columns under their names, as `kubectl get` shows them.
JOB_COLUMNS = [
    "NAME",
    "NAMESPACE",
    "JOB STATUS",
    "DEPLOYMENT STATUS",
    "RAY CLUSTER NAME",
    "START TIME",
    "END TIME",
    "AGE",
]
SERVICE_COLUMNS = ["NAME", "NAMESPACE", "SERVICE STATUS", "NUM SERVE ENDPOINTS", "ACTIVE CLUSTER", "PENDING CLUSTER",
                   "READY APPLICATIONS", "AGE"]  # fmt: skip


def ok(done: Any) -> str:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return str(done.stdout)


def apply_example(api: httpx.Client, namespace: str, plural: str, file: str) -> dict[str, Any]:
    obj = yaml.safe_load((EXAMPLES / file).read_text())
    response = api.post(f"/apis/ray.io/v1/namespaces/{namespace}/{plural}", json=obj)
    response.raise_for_status()
    created: dict[str, Any] = response.json()
    return created


def status_when(api: httpx.Client, path: str, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    last: dict[str, Any] = {}

    def reached() -> dict[str, Any]:
        last.clear()
        last.update(api.get(path).json())
        return last if ready(last.get("status") or {}) else {}

    obj: dict[str, Any] = eventually(
        reached, 120, lambda: f"{path}'s status (last: {last.get('status')})", every=1
    )
    return obj


def row_matching(ray_cli: RayCli, api: httpx.Client, path: str, args: list[str], expected: Callable[[dict[str, Any]], dict[str, str]]) -> dict[str, str]:  # fmt: skip
    """The table's one row once it agrees with the object read right after it (the operator may write between)."""
    seen: list[tuple[dict[str, str], dict[str, str]]] = []

    def agreeing() -> dict[str, str]:
        text = ok(ray_cli("get", *args))
        tables.assert_layout(text)
        [row] = tables.parse(text)
        seen[:] = [(row, expected(api.get(path).json()))]
        return row if all(row[key] == value for key, value in seen[0][1].items()) else {}

    row: dict[str, str] = eventually(
        agreeing, 30, lambda: f"the row agreeing with the object (row, want): {seen}", every=1
    )
    return row


def test_get_job_and_service_columns_outputs_and_errors(
    ray_cli: RayCli, operator: OperatorProcess, api: httpx.Client, namespace: str, localkube: LocalKubeProcess
) -> None:
    assert ok(ray_cli("get", "job")) == "" and ok(ray_cli("get", "services")) == ""  # no rows: no header
    apply_example(api, namespace, "rayjobs", "ray-job.k8s-job-mode.yaml")
    apply_example(api, namespace, "rayservices", "ray-service.yaml")
    job_path = f"/apis/ray.io/v1/namespaces/{namespace}/rayjobs/k8s-job-mode"
    service_path = f"/apis/ray.io/v1/namespaces/{namespace}/rayservices/fruit-stand"
    job = status_when(api, job_path, lambda s: bool(s.get("rayClusterName") and s.get("startTime")))
    status_when(api, service_path, lambda s: bool((s.get("pendingServiceStatus") or s.get("activeServiceStatus") or {}).get("rayClusterName")))  # fmt: skip

    def job_row(obj: dict[str, Any]) -> dict[str, str]:
        s = obj["status"]
        return {"NAME": "k8s-job-mode", "NAMESPACE": namespace, "JOB STATUS": s.get("jobStatus", ""),
                "DEPLOYMENT STATUS": s.get("jobDeploymentStatus", ""), "RAY CLUSTER NAME": s["rayClusterName"],
                "START TIME": s["startTime"], "END TIME": s.get("endTime", "")}  # fmt: skip

    text = ok(ray_cli("get", "rayjobs"))
    assert [name for name, _ in tables.columns(text.splitlines()[0])] == JOB_COLUMNS
    row = row_matching(ray_cli, api, job_path, ["job"], job_row)
    assert row["RAY CLUSTER NAME"] == job["status"]["rayClusterName"] and row["AGE"].endswith(("s", "m"))

    def service_row(obj: dict[str, Any]) -> dict[str, str]:
        s = obj["status"]
        apps = (s.get("activeServiceStatus") or {}).get("applicationStatuses") or {}
        running = sum(1 for a in apps.values() if a.get("status") == "RUNNING")
        return {"NAME": "fruit-stand", "NAMESPACE": namespace, "SERVICE STATUS": s.get("serviceStatus", ""),
                "NUM SERVE ENDPOINTS": str(s.get("numServeEndpoints", 0)),
                "ACTIVE CLUSTER": (s.get("activeServiceStatus") or {}).get("rayClusterName", ""),
                "PENDING CLUSTER": (s.get("pendingServiceStatus") or {}).get("rayClusterName", ""),
                "READY APPLICATIONS": f"{running}/{len(apps)}"}  # fmt: skip

    text = ok(ray_cli("get", "service"))
    assert [name for name, _ in tables.columns(text.splitlines()[0])] == SERVICE_COLUMNS
    row = row_matching(ray_cli, api, service_path, ["rayservice", "fruit-stand"], service_row)
    assert row["PENDING CLUSTER"] or row["ACTIVE CLUSTER"]

    # -o wide: the same columns and a few more; -o json|yaml: the object, or a List of them.
    wide = tables.parse(ok(ray_cli("get", "job", "k8s-job-mode", "-o", "wide")))[0]
    assert (wide["JOB ID"], wide["SUBMISSION MODE"]) == (
        api.get(job_path).json()["status"].get("jobId", ""),
        "K8sJobMode",
    )
    assert "UPGRADE IN PROGRESS" in tables.parse(ok(ray_cli("get", "services", "-o", "wide")))[0]
    assert json.loads(ok(ray_cli("get", "job", "k8s-job-mode", "-o", "json")))["kind"] == "RayJob"
    listed = yaml.safe_load(ok(ray_cli("get", "service", "-o", "yaml")))
    assert (listed["kind"], [s["metadata"]["name"] for s in listed["items"]]) == ("List", ["fruit-stand"])
    everywhere = tables.parse(ok(ray_cli("get", "jobs", "-A")))
    assert ("k8s-job-mode", namespace) in {(r["NAME"], r["NAMESPACE"]) for r in everywhere}

    # A missing name is an error, not an empty table.
    for kind, noun in (("job", "job"), ("service", "service")):
        done = ray_cli("get", kind, "nope")
        assert (
            done.returncode == 1
            and done.stderr == f"Error: Ray {noun} nope not found in namespace {namespace}\n"
        )

    # Tab completion offers the namespace's RayJobs and RayServices.
    for words, names in ((["get", "job"], ["k8s-job-mode"]), (["get", "rayservices"], ["fruit-stand"]),
                         (["log", "job"], ["k8s-job-mode"]), (["session", "service"], ["fruit-stand"])):  # fmt: skip
        completion = run_plugin(localkube.kubeconfig, "ray", *words, "-n", namespace, "", kubectl=("kubectl", "__complete"))  # fmt: skip
        assert completion.stdout.splitlines() == [*names, ":4"], (words, completion.stdout, completion.stderr)


def test_log_and_session_take_type_and_name_as_two_words(
    ray_cli: RayCli, operator: OperatorProcess, api: httpx.Client, namespace: str, tmp_path: Any
) -> None:
    apply_example(api, namespace, "rayjobs", "ray-job.k8s-job-mode.yaml")
    job_path = f"/apis/ray.io/v1/namespaces/{namespace}/rayjobs/k8s-job-mode"
    job = status_when(
        api, job_path, lambda s: bool((s.get("rayClusterStatus") or {}).get("head", {}).get("podName"))
    )
    # Simulated pods run no Ray and keep no logs: the RayJob's driver output and submitter log are said to be
    # missing, then the first node of the job's own cluster is where it stops.
    done = ray_cli("log", "job", "k8s-job-mode", "--out-dir", str(tmp_path))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "No Ray job logs for RayJob k8s-job-mode: " in done.stdout
    assert "No submitter log for RayJob k8s-job-mode: " in done.stdout
    node_error = f"Error: Error retrieving log for Ray cluster node {job['status']['rayClusterName']}-"
    assert node_error in done.stderr
    slash = ray_cli("log", "rayjob/k8s-job-mode", "--out-dir", str(tmp_path))
    assert slash.returncode == 1 and node_error in slash.stderr
    missing = ray_cli("log", "job", "nope")
    assert missing.returncode == 1 and "Error: failed to retrieve Ray job info for nope: " in missing.stderr
    wrong = ray_cli("log", "pod", "x")
    assert wrong.returncode == 2 and "unsupported resource type: pod" in wrong.stderr
    wrong = ray_cli("log", "pod/x")
    assert wrong.returncode == 2 and wrong.stderr.endswith("Error: unsupported resource type: pod\n")

    # --link gke: upstream's two warnings on stderr (the simulated head runs no fluentbit; the context is
    # localkube's), the node-type line and the link on stdout.
    linked = ray_cli("log", "job", "k8s-job-mode", "--link", "gke", "--node-type", "head")
    assert ok(linked).splitlines()[0] == "Command set to retrieve only head node logs."
    assert ok(linked).splitlines()[1].startswith("https://console.cloud.google.com/logs/query;query=")
    assert linked.stderr == (
        "Warning: The head pod does not have a 'fluentbit' container. Logs might not be exported to Google Cloud "
        "Logging.\nWarning: The current kubectl context does not appear to be a GKE cluster. The generated link "
        "may not work.\n"
    )
    missing = ray_cli("log", "service", "nope")
    assert missing.returncode == 1 and "Error: failed to retrieve Ray job info for nope: " in missing.stderr

    # `session job NAME` looks the RayJob up as `session rayjob/NAME` does; a working forward binds localhost:8265,
    # which only the e2e tier's session test may hold.
    unknown = ray_cli("session", "job", "nope")
    assert unknown.returncode == 1 and "Error: unable to find RayJob nope" in unknown.stderr
