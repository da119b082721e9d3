"""Ray-side faults users report, on real Ray through the user's path (`kuberay local up --node-mode process`,
`kubectl apply`, `kubectl delete pod`).

- kuberay#3903: the head pod deleted while a RayJob runs. The job's driver ran on that head, so the job is
  lost; upstream leaves the RayJob Running. Ours ends the attempt Failed with reason `HeadPodLost`, naming
  the lost pod, and cleans up by the job's policy (here `shutdownAfterJobFinishes` with no TTL).
- kuberay#4760 / #4199: a head whose dashboard starts serving late. With Ray 2.53 and later the head's
  readiness probe asks only the dashboard agent (port 52365), so the cluster is ready while port 8265 still
  refuses. Here Ray's dashboard listens on 8266 and the head's port 8265 (the one its Service, the
  submitters and the operator use) serves it only once the test opens a gate in the head: a small TCP relay
  from a ConfigMap (mounted under /srv), started by the head's own command once a file appears in an
  emptyDir, so Ray itself starts as usual. The test opens each head's gate (`kubectl exec ... touch`) only
  once that mode is seen waiting on the refusing dashboard: the K8sJobMode submitter's and the SidecarMode
  container's "Waiting for Ray Dashboard" lines, HTTPMode's `JobStatusCheckFailed` Warning. Then nothing is
  burnt against the silent dashboard: the K8sJobMode submitter Job has no failed pod, the SidecarMode
  submitter container no restart or failure, HTTPMode no failed POST, and each job SUCCEEDED on its first
  attempt.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import ray
import yaml

from support.eventually import eventually
from support.local_instance import EXAMPLES, KUBECTL_POLL, LocalInstance

# Three real Ray clusters at once on a loaded two-core machine: a bound, not a measurement.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Ray on a loaded two-core machine: bounds, not measurements.
TIMEOUT = 420.0
# The file whose appearance in the head lets its port 8265 serve the dashboard (an emptyDir of the head).
GATE = "/srv/dashboard-gate/open"
RELAY = """\
import asyncio, sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def serve(client_reader, client_writer):
    reader, writer = await asyncio.open_connection("127.0.0.1", int(sys.argv[2]))
    await asyncio.gather(pipe(client_reader, writer), pipe(reader, client_writer), return_exceptions=True)


async def main():
    server = await asyncio.start_server(serve, "0.0.0.0", int(sys.argv[1]))
    await server.serve_forever()


asyncio.run(main())
"""
WAITING_LINE = "Waiting for Ray Dashboard GCS to become healthy"


def _example(name: str) -> dict[str, Any]:
    (obj,) = [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc]
    return obj


def _status(local: LocalInstance, name: str, namespace: str) -> dict[str, Any]:
    status: dict[str, Any] = local.get("rayjob", name, namespace).get("status") or {}
    return status


def _finished(local: LocalInstance, name: str, namespace: str) -> dict[str, Any]:
    try:
        return eventually(
            lambda: (s := _status(local, name, namespace)).get("jobDeploymentStatus") in ("Complete", "Failed")
            and s, TIMEOUT, f"RayJob {namespace}/{name} finished", every=KUBECTL_POLL,
        )  # fmt: skip
    except AssertionError as e:
        pods = local.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False)
        raise AssertionError(f"{e}\nstatus: {_status(local, name, namespace)}\npods:\n{pods}") from e


def _head_pods(local: LocalInstance, cluster: str, namespace: str) -> list[dict[str, Any]]:
    found = json.loads(local.kubectl("get", "pods", "-n", namespace, "-l",
                                     f"ray.io/cluster={cluster},ray.io/node-type=head", "-o", "json"))  # fmt: skip
    pods: list[dict[str, Any]] = found["items"]
    return pods


def test_a_head_pod_deleted_mid_job_fails_the_rayjob_naming_it_and_cleans_up(
    local_process: LocalInstance,
) -> None:
    namespace = local_process.namespace("head-lost")
    job = _example("ray-job.k8s-job-mode.yaml")
    job["metadata"]["name"] = "head-lost"
    job["spec"]["entrypoint"] = "python -c \"import time; print('started', flush=True); time.sleep(900)\""
    job["spec"]["ttlSecondsAfterFinished"] = 0
    local_process.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(job))
    running = eventually(
        lambda: (s := _status(local_process, "head-lost", namespace)).get("jobStatus") == "RUNNING" and s,
        TIMEOUT, "the Ray job RUNNING", every=KUBECTL_POLL,
    )  # fmt: skip
    cluster = running["rayClusterName"]
    (head,) = _head_pods(local_process, cluster, namespace)
    lost = head["metadata"]["name"]
    local_process.kubectl("delete", "pod", lost, "-n", namespace, "--wait=false")

    failed = _finished(local_process, "head-lost", namespace)
    assert (failed["jobDeploymentStatus"], failed["reason"], failed.get("failed")) == (
        "Failed", "HeadPodLost", 1,
    ), failed  # fmt: skip
    assert f"{namespace}/{lost}" in failed["message"]
    # shutdownAfterJobFinishes with no TTL: the cluster and every pod of it go; the RayJob stays.
    eventually(lambda: not local_process.kubectl("get", "raycluster", "-n", namespace, "-o", "name"),
          TIMEOUT, "the RayCluster deleted", every=KUBECTL_POLL)  # fmt: skip
    eventually(lambda: not local_process.kubectl("get", "pods", "-n", namespace, "-l", f"ray.io/cluster={cluster}",
                                            "-o", "name"), TIMEOUT, "the cluster's pods gone", every=KUBECTL_POLL)  # fmt: skip
    assert _status(local_process, "head-lost", namespace)["jobDeploymentStatus"] == "Failed"
    local_process.kubectl("delete", "rayjob", "head-lost", "-n", namespace, "--wait=false")


def _late_dashboard(job: dict[str, Any]) -> dict[str, Any]:
    """The RayJob with this Ray's version (whose head readiness does not wait for the dashboard) and a head
    whose dashboard port serves once GATE exists; the cluster is kept for the checks."""
    job = copy.deepcopy(job)
    job["spec"]["shutdownAfterJobFinishes"] = False
    job["spec"].pop("ttlSecondsAfterFinished", None)
    cluster = job["spec"]["rayClusterSpec"]
    cluster["rayVersion"] = ray.__version__
    head_group = cluster["headGroupSpec"]
    head_group["rayStartParams"]["dashboard-port"] = "8266"
    pod = head_group["template"]["spec"]
    pod["volumes"] = [
        {"name": "late-dashboard", "configMap": {"name": "late-dashboard"}},
        {"name": "dashboard-gate", "emptyDir": {}},
    ]
    head = pod["containers"][0]
    head["volumeMounts"] = [
        {"name": "late-dashboard", "mountPath": "/srv/late-dashboard"},
        {"name": "dashboard-gate", "mountPath": str(Path(GATE).parent)},
    ]
    relay = "exec python /srv/late-dashboard/relay.py 8265 8266"
    # Runs before the operator's `ray start` (it is joined to it with `&&`).
    head["args"] = [f"(until [ -e {GATE} ]; do sleep 1; done; {relay}) & true"]
    return job


def _seen_waiting(local: LocalInstance, mode: str, name: str, namespace: str) -> bool:
    """Whether the mode's submitter has shown that it waits on the refusing dashboard."""
    if mode == "K8sJobMode":
        return WAITING_LINE in local.kubectl("logs", "-n", namespace, "--tail=-1", "-l", f"job-name={name}",
                                             check=False)  # fmt: skip
    cluster = _status(local, name, namespace).get("rayClusterName")
    if not cluster:
        return False
    if mode == "SidecarMode":
        heads = _head_pods(local, cluster, namespace)
        return bool(heads) and WAITING_LINE in local.kubectl(
            "logs", "-n", namespace, heads[0]["metadata"]["name"], "-c", "ray-job-submitter", check=False
        )
    # HTTPMode: the operator's first status check against the refusing dashboard failed, and said so.
    return bool(local.kubectl("get", "events", "-n", namespace, "-o", "name", "--field-selector",
                              f"involvedObject.name={name},reason=JobStatusCheckFailed"))  # fmt: skip


def _agent_ready(local: LocalInstance, name: str, namespace: str) -> bool:
    """Whether the head's Ray container is ready: its probe asks the job agent, which a submission needs once
    the dashboard answers (Ray's dashboard waits 10 s for it; on a loaded machine a fresh head's agent came
    later than that, and the SidecarMode submitter, which submits once, failed on Ray's refusal)."""
    cluster = _status(local, name, namespace).get("rayClusterName")
    heads = _head_pods(local, cluster, namespace) if cluster else []
    statuses = [s for head in heads for s in (head.get("status") or {}).get("containerStatuses") or []]
    return any(s["name"] == "ray-head" and s.get("ready") for s in statuses)


def _open_gate(local: LocalInstance, name: str, namespace: str) -> None:
    (head,) = _head_pods(local, _status(local, name, namespace)["rayClusterName"], namespace)
    local.kubectl("exec", "-n", namespace, head["metadata"]["name"], "-c", "ray-head", "--", "touch", GATE)


def test_a_late_dashboard_burns_no_submission_in_any_mode(local_process: LocalInstance) -> None:
    namespace = local_process.namespace("late-dashboard")
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late-dashboard"},
                  "data": {"relay.py": RELAY}}  # fmt: skip
    local_process.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(config_map))
    jobs = {mode: _late_dashboard(_example(f"ray-job.{name}.yaml")) for mode, name in
            {"K8sJobMode": "k8s-job-mode", "HTTPMode": "http-mode", "SidecarMode": "sidecar-mode"}.items()}  # fmt: skip
    names = {mode: job["metadata"]["name"] for mode, job in jobs.items()}
    for job in jobs.values():
        local_process.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(job))
    closed = dict(names)

    def open_where_waiting() -> bool:
        for mode, name in list(closed.items()):
            waiting = _seen_waiting(local_process, mode, name, namespace)
            if waiting and _agent_ready(local_process, name, namespace):
                _open_gate(local_process, name, namespace)
                del closed[mode]
        return not closed

    try:
        eventually(
            open_where_waiting,
            TIMEOUT,
            "each mode seen waiting on its refusing dashboard",
            every=KUBECTL_POLL,
        )
    except AssertionError as error:
        error.args = (f"{error}; not seen waiting with a ready head: {', '.join(closed)}",)
        raise
    done = {mode: _finished(local_process, name, namespace) for mode, name in names.items()}
    try:
        for mode, status in done.items():
            assert (status["jobDeploymentStatus"], status.get("jobStatus"), status.get("succeeded"),
                    status.get("failed", 0)) == ("Complete", "SUCCEEDED", 1, 0), f"{mode}: {status}"  # fmt: skip
            (head,) = _head_pods(local_process, status["rayClusterName"], namespace)
            probe = next(c for c in head["spec"]["containers"] if c["name"] == "ray-head")["readinessProbe"]
            assert probe["httpGet"]["port"] == 52365, probe  # readiness does not wait for the dashboard

        # K8sJobMode: no pod of the submitter Job failed while it waited.
        submitter = local_process.get("job", names["K8sJobMode"], namespace)
        assert (submitter["status"].get("succeeded"), submitter["status"].get("failed", 0)) == (1, 0)

        # SidecarMode: its container in the head pod never restarted and exited 0.
        sidecar_head = _head_pods(local_process, done["SidecarMode"]["rayClusterName"], namespace)[0]
        (sidecar,) = [
            s for s in sidecar_head["status"]["containerStatuses"] if s["name"] == "ray-job-submitter"
        ]
        assert (sidecar["restartCount"], sidecar["state"]["terminated"]["exitCode"]) == (0, 0), sidecar

        # HTTPMode: the operator submitted once, and no POST failed.
        job_id = done["HTTPMode"]["jobId"]
        operator_log = Path(str((local_process.status() or {})["logs"]["operator"])).read_text()
        submissions = re.findall(rf"(submitted|submitting) Ray job {re.escape(job_id)} ", operator_log)
        assert submissions == ["submitted"], submissions
    finally:
        local_process.kubectl("delete", "rayjobs", "--all", "-n", namespace, "--wait=false")
