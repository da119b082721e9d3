"""RayJob samples in simulate mode: a Ray Jobs API stand-in on each head, and each job's end state.

In simulate mode no Ray runs: a submitter Job's pod completes at once (localkube plays it), but nothing
answers on the head's dashboard, so either operator would mark the RayJob `Failed` once the submitter had
finished. `JobsStandIn` plays the Ray head's Jobs API instead: it listens where localkube is told to put
the sample's head pod (`localkube.io/pod-ip`), on the head's dashboard port, and the operator reaches it
through the API server's service proxy as it would reach Ray. Every job ends `SUCCEEDED` at once; a job
the operator submits over HTTP (HTTPMode) is known only once submitted, and one a submitter would have
submitted (K8sJobMode, SidecarMode) is known from the start, since the simulated submitter sends nothing.

A sample that selects an existing cluster (`clusterSelector`) gets `ray-cluster.sample.yaml` under the
selected name, as its comment asks. End states, as each sample's spec leads to them in simulate mode:
`Complete` (or `Failed`, which is reported as such); `Waiting` for InteractiveMode (no job id until a
user sets one); and for SidecarMode `Running` with job status `SUCCEEDED`: the submitter is a container
of the head pod, which never exits in simulate mode, and both operators wait for it to finish.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from integration.raycluster.conftest import SAMPLES, Kube, load_sample
from integration.raycluster.test_samples import SUPPORTING_KINDS
from integration.runtime.kube import new_namespace
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime.client import Client

POD_IP_ANNOTATION = "localkube.io/pod-ip"
DASHBOARD_PORT = 8265
EXISTING_CLUSTER_SAMPLE = "ray-cluster.sample.yaml"
# Addresses no test of the suite uses (simulated pods get 127.244.0.0/16, the RayService tests 127.251.x.1).
_addresses = (f"127.253.{i // 250}.{i % 250 + 1}" for i in itertools.count(random.randrange(0, 60000, 250)))


def rayjob_samples() -> list[str]:
    return sorted(
        p.name
        for p in SAMPLES.glob("ray-job*.yaml")
        if any(d["kind"] == "RayJob" for d in load_sample(p.name))
    )


def the_rayjob(sample: str) -> dict[str, Any]:
    """The sample's RayJob; one with a `generateName` gets a fixed name, so that runs pair up."""
    (job,) = [d for d in load_sample(sample) if d["kind"] == "RayJob"]
    if "name" not in job["metadata"]:
        job["metadata"]["name"] = job["metadata"].pop("generateName") + "0"
    return job


def submission_mode(job: dict[str, Any]) -> str:
    return str(job["spec"].get("submissionMode") or "K8sJobMode")


class JobsStandIn:
    """The Jobs API of one simulated Ray head (`/api/jobs/`), on `address:port`, in a thread of its own."""

    def __init__(self, address: str, port: int, operator_submits: bool) -> None:
        self.submitted: dict[str, dict[str, Any]] = {}
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                job_id = self.path.removeprefix("/api/jobs/").strip("/")
                if not job_id:
                    self._answer(200, list(standin.submitted.values()))
                elif job_id in standin.submitted or not operator_submits:
                    self._answer(200, standin.info(job_id))
                else:  # what Ray's dashboard answers for a job it does not know
                    self._answer(404, {"detail": f"Job {job_id} does not exist"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.endswith("/stop"):
                    self._answer(200, {"stopped": False})  # every job here has finished
                    return
                job_id = body.get("submission_id") or f"raysubmit_{len(standin.submitted)}"
                standin.info(job_id, body.get("entrypoint", ""))
                self._answer(200, {"job_id": job_id, "submission_id": job_id})

            def do_DELETE(self) -> None:
                self._answer(200, {"deleted": True})

            def _answer(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def info(self, job_id: str, entrypoint: str = "") -> dict[str, Any]:
        """The job's details as Ray reports them (the job ends SUCCEEDED as soon as it is known)."""
        if job_id not in self.submitted:
            now = int(time.time() * 1000)
            self.submitted[job_id] = {
                "type": "SUBMISSION", "job_id": None, "submission_id": job_id, "status": "SUCCEEDED",
                "entrypoint": entrypoint, "message": "Job finished successfully.", "error_type": None,
                "start_time": now, "end_time": now, "metadata": {}, "runtime_env": {},
                "driver_exit_code": 0,
            }  # fmt: skip
        return self.submitted[job_id]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def _pin_head(cluster_spec: dict[str, Any]) -> tuple[str, int]:
    """Pins the head pod of `cluster_spec` to a fresh loopback address; returns it and the dashboard port."""
    address = next(_addresses)
    template = cluster_spec["headGroupSpec"].setdefault("template", {})
    template.setdefault("metadata", {}).setdefault("annotations", {})[POD_IP_ANNOTATION] = address
    ports = {p.get("name"): p["containerPort"] for p in template["spec"]["containers"][0].get("ports") or ()}
    return address, ports.get("dashboard", DASHBOARD_PORT)


async def create_rayjob_sample(client: Client, sample: str, standins: list[JobsStandIn]) -> Kube:
    """The sample's namespace with its supporting objects, its Jobs API stand-in (added to `standins`) and
    the RayJob; a selected cluster is created first."""
    kube = Kube(client, await new_namespace(client))
    for doc in load_sample(sample):
        resource = SUPPORTING_KINDS.get(doc["kind"])
        if resource is not None:
            doc["metadata"]["namespace"] = kube.namespace
            await client.create(resource, doc)
    job = copy.deepcopy(the_rayjob(sample))
    selector = job["spec"].get("clusterSelector") or {}
    if selector:
        (existing,) = [d for d in load_sample(EXISTING_CLUSTER_SAMPLE) if d["kind"] == RAYCLUSTER.kind]
        existing["metadata"]["name"] = selector["ray.io/cluster"]
        cluster_spec = existing["spec"]
    else:
        cluster_spec = job["spec"]["rayClusterSpec"]
    address, port = _pin_head(cluster_spec)
    standins.append(JobsStandIn(address, port, operator_submits=submission_mode(job) == "HTTPMode"))
    if selector:
        await kube.create_cluster(existing)
    job["metadata"]["namespace"] = kube.namespace
    await client.create(RAYJOB, job)
    return kube


async def rayjob_outcome(kube: Kube, sample: str) -> tuple[str, str]:
    """(`ended` | `failed` | `pending`, detail) for one RayJob sample, read now."""
    job = the_rayjob(sample)
    status = (await kube.client.get(RAYJOB, job["metadata"]["name"], kube.namespace)).get("status") or {}
    deployment, job_status = status.get("jobDeploymentStatus"), status.get("jobStatus")
    detail = f"{deployment} jobStatus={job_status}"
    mode = submission_mode(job)
    if deployment == "Failed":
        return "failed", f"{detail} reason={status.get('reason')!r}: {status.get('message')}"
    if (
        deployment == "Complete"
        or (mode == "InteractiveMode" and deployment == "Waiting")
        or (mode == "SidecarMode" and deployment == "Running" and job_status == "SUCCEEDED")
    ):
        return "ended", detail
    return "pending", detail
