"""Drill: Ray dashboards that hang, answer 500, answer garbage or refuse, beside one that works.

A real Ray dashboard cannot hang or answer garbage on demand, so small fakes on 127.0.0.1 stand in for the
heads' dashboards: one accepts connections and never answers, one answers every request 500, one answers
200 with a body that is not JSON, one is a port nothing listens on (the API server's proxy answers 503 with
a Status for it, which upstream decodes as a job whose status is "Failure"), and a healthy one accepts each
submission and reports it SUCCEEDED.
localkube (simulate mode) pins each RayJob's head pod to 127.0.0.1 (`localkube.io/pod-ip`) with the
dashboard port of its fake, and the operator (one reconcile worker, so one call that never returned would
stop everything) reaches them through the API server's service proxy, as it reaches a real head.

The healthy RayJob must complete, submitted exactly once, while the others are stuck in Running; each stuck
RayJob says why in a Warning Event (JobStatusCheckFailed) naming the dashboard's failure, the hung one a
timeout (the operator's own, well before the API server's proxy would give up).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from kuberay.local.ports import free_port
from reliability import invariants
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

pytestmark = pytest.mark.timers

NAMESPACE = "dashboard-drill"
IMAGE = "rayproject/ray:2.52.0"


class FakeDashboard(ThreadingHTTPServer):
    """Answers the Jobs API as `behaviour` says: "healthy", "error" (500 to everything) or "garbage"."""

    daemon_threads = True

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.submissions = 0
        self.jobs: set[str] = set()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: FakeDashboard

    def do_GET(self) -> None:
        job = self.path.rstrip("/").rsplit("/", 1)[-1]
        if self.server.behaviour == "healthy" and job in self.server.jobs:
            self._answer(200, {"submission_id": job, "job_id": job, "status": "SUCCEEDED", "entrypoint": "x"})
        else:
            self._answer(404, None)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.submissions += 1
        job = body.get("submission_id", "")
        self.server.jobs.add(job)
        self._answer(200, {"job_id": job, "submission_id": job})

    def _answer(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode() if body is not None else b"Not Found"
        if self.server.behaviour == "error":
            code, data = 500, b"Internal Server Error"
        elif self.server.behaviour == "garbage":
            code, data = 200, b"\x00\xffnot json{"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def dashboards() -> Iterator[tuple[dict[str, int], FakeDashboard]]:
    """The port of each kind of dashboard ("hang": a socket listened on and never accepted; "refused": a
    port bound and let go, so nothing listens there), and the healthy one."""
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(64)
    servers = {b: FakeDashboard(b) for b in ("healthy", "error", "garbage")}
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers.values()]
    for thread in threads:
        thread.start()
    try:
        ports = {"hang": hang.getsockname()[1], "refused": free_port()}
        ports.update({b: s.server_address[1] for b, s in servers.items()})
        yield ports, servers["healthy"]
    finally:
        hang.close()
        for s in servers.values():
            s.shutdown()
            s.server_close()


def _rayjob(name: str, port: int) -> dict[str, Any]:
    head = {"name": "ray-head", "image": IMAGE, "ports": [{"name": "dashboard", "containerPort": port}]}
    cluster = {
        "rayVersion": "2.52.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {
                "metadata": {"annotations": {"localkube.io/pod-ip": "127.0.0.1"}},
                "spec": {"containers": [head]},
            },
        },
    }
    spec = {"entrypoint": "python -c 'print(1)'", "submissionMode": "HTTPMode", "rayClusterSpec": cluster}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": spec}


def _why(client: httpx.Client, name: str) -> str:
    job = client.get(f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayjobs/{name}").json()
    events = [
        e["message"]
        for e in invariants.items(client, f"/api/v1/namespaces/{NAMESPACE}/events")
        if e["involvedObject"].get("name") == name and e["type"] == "Warning"
    ]
    return "\n".join([(job.get("status") or {}).get("message") or "", *events])


# What each stuck RayJob's Warning must name.
WHY = {
    "hang": "timed out",
    "error": "Internal Server Error",
    "garbage": "GetJobInfo fail",
    "refused": "GetJobInfo fail: 503",
}


@pytest.mark.slow
def test_bad_dashboards_stall_only_their_own_rayjobs_and_say_why(
    localkube_factory: Callable[..., LocalKubeProcess],
    dashboards: tuple[dict[str, int], FakeDashboard],
    tmp_path: Path,
) -> None:
    ports, healthy = dashboards
    server = localkube_factory()
    server.apply_files(invariants.CRDS)
    operator = OperatorProcess(
        server.kubeconfig, tmp_path / "operator.log", "--use-kubernetes-proxy", "--reconcile-concurrency=1"
    )
    rayjobs = f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayjobs"
    with server.client(timeout=30) as client:
        client.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
        operator.start()
        try:
            # The bad ones first: the healthy one queues behind them on the one worker.
            for name in (*WHY, "healthy"):
                client.post(rayjobs, json=_rayjob(name, ports[name])).raise_for_status()

            def status(name: str) -> dict[str, Any]:
                return client.get(f"{rayjobs}/{name}").json().get("status") or {}

            eventually(lambda: status("healthy").get("jobStatus") == "SUCCEEDED", 120, "the healthy job")
            assert healthy.submissions == 1
            for name, why in WHY.items():
                eventually(partial(lambda n, w: w in _why(client, n), name, why), 60, f"why {name} is stuck")
                stuck = status(name)
                # No job status was read, so none is shown (not the proxy's Status decoded as one).
                assert (stuck.get("jobDeploymentStatus"), stuck.get("jobStatus") or "") == ("Running", ""), (
                    stuck
                )
        finally:
            operator.stop()
