"""The head's last snapshot and the session's end record (issue 49, item 3), with `kuberay-history-collector`
run as the injected sidecar runs it beside a stand-in dashboard (no Ray needed): the Ray container's preStop
hook, as the operator builds it and the kubelet runs it, has the final snapshot taken while the dashboard is
still up, whether it comes before the collector's own SIGTERM or with it; without it (the dashboard gone
first) the end record says the final snapshot failed. A user's own preStop hook, composed with it, still
runs after."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from kuberay.builders import collector, pod
from kuberay.history import layout
from kuberay.history.collector.snapshots import ENDPOINTS
from kuberay.local.ports import free_port
from support.eventually import eventually
from unit.builders import podcases

COLLECTOR = str(Path(sys.executable).parent / "kuberay-history-collector")
SESSION = "session_2026-05-06_07-08-09_101112_13"
NEXT_SESSION = "session_2026-05-06_07-20-00_000001_14"
NODE_ID = "cd" * 28
CLUSTER = layout.ClusterRef("jobs", "rayjob-sample-raycluster-abcde", "RayJob", "rayjob-sample")
# The builders' golden case: a RayJob's cluster with the collector injected.
CASE = podcases.DIRECTORY / "history-collector.input.yaml"


class Dashboard:
    """The head's dashboard as the collector snapshots it: one job, whose status the test moves on, and
    nothing else (the collector learns its node id from the raylet's log)."""

    def __init__(self) -> None:
        self.status = "RUNNING"
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/api/jobs/":
                    self.send_error(404)
                    return
                job = {"job_id": "02000000", "submission_id": "rayjob-sample-x", "status": owner.status}
                body = json.dumps([job]).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """As a deleted pod's Ray container goes: no more answers."""
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Head:
    process: subprocess.Popen[bytes]
    port: int
    logs: Path
    store: Path
    dashboard: Dashboard

    def stored_status(self) -> str | None:
        key = self.store / CLUSTER.endpoints_dir("", SESSION) / "restful__api__jobs"
        return str(json.loads(key.read_text())[0]["status"]) if key.is_file() else None

    def end_record(self) -> dict[str, object]:
        record: dict[str, object] = json.loads(
            (self.store / CLUSTER.session_end_key("", SESSION)).read_text()
        )
        return record

    def pre_stop(self) -> httpx.Response:
        """The Ray container's preStop hook as the operator builds it, run as the kubelet runs an httpGet
        hook: a GET to the pod's address, waited for (the collector's port here is a free one)."""
        cluster, options, _ = podcases.load(CASE)
        ray = pod.build_head_pod(cluster, options)["spec"]["containers"][0]
        path = ray["lifecycle"]["preStop"]["httpGet"]["path"]
        return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=90)


@pytest.fixture
def head(tmp_path: Path) -> Iterator[Head]:
    """A head's collector that snapshots its dashboard once, when it finds the session, and then (an hour's
    poll interval) only at the end: what is stored of the finished job is the final snapshot's alone."""
    ray_root = tmp_path / "ray"
    logs = ray_root / SESSION / "logs"
    logs.mkdir(parents=True)
    (ray_root / "session_latest").symlink_to(SESSION)
    (logs / "raylet.out").write_text(f"[raylet] main.cc:711: Setting node ID node_id={NODE_ID}\n")
    dashboard, port, store = Dashboard(), free_port(), tmp_path / "store"
    env = {
        **os.environ, "RAY_CLUSTER_NAME": CLUSTER.name, "RAY_CLUSTER_NAMESPACE": CLUSTER.namespace,
        "RAY_ROLE": "Head", "OWNER_KIND": "RayJob", "OWNER_NAME": CLUSTER.owner_name, "EVENTS_PORT": str(port),
        "RAY_TMP_ROOT": str(ray_root), "POD_IP": "127.0.0.1", "RAY_DASHBOARD_ADDRESS": dashboard.url,
        "STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": str(store), "PUSH_INTERVAL": "0.2s",
        "RAY_COLLECTOR_POLL_INTERVAL": "1h", "RAY_COLLECTOR_FLUSH_TIMEOUT": "60s",
    }  # fmt: skip
    with (tmp_path / "collector.log").open("ab") as log:
        process = subprocess.Popen([COLLECTOR], env=env, stdout=log, stderr=log)
    node = Head(process, port, logs, store, dashboard)
    try:
        eventually(lambda: node.stored_status() == "RUNNING", 60, "the first snapshot", every=0.1)
        yield node
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        dashboard.stop()


def test_the_pre_stop_hook_has_the_final_snapshot_taken_while_the_dashboard_is_up(head: Head) -> None:
    head.dashboard.status = "SUCCEEDED"  # the job ends; `ttlSecondsAfterFinished: 0` deletes the cluster
    hooked = head.pre_stop()
    assert hooked.status_code == 200, hooked.text
    assert hooked.json() == {"finalSnapshot": {"succeeded": True, "unanswered": []}}
    head.dashboard.stop()  # the kubelet signals the Ray container once its hook is over
    (head.logs / "raylet.out").write_text("what Ray logs as it goes\n")
    head.process.send_signal(signal.SIGTERM)
    assert head.process.wait(90) == 0
    assert head.stored_status() == "SUCCEEDED"
    stored_log = head.store / CLUSTER.logs_dir("", SESSION, NODE_ID) / "raylet.out"
    assert stored_log.read_text() == "what Ray logs as it goes\n"  # logs are still uploaded after the hook
    assert head.end_record() | {"endTime": None, "endTimeStamp": None} == {
        "sessionName": SESSION, "endTime": None, "endTimeStamp": None, "reason": "preStop",
        "finalSnapshot": {"succeeded": True, "unanswered": []}, "finalUpload": "done",
    }  # fmt: skip


def test_sigterm_and_the_hook_at_once_take_one_final_snapshot_before_the_dashboard_goes(head: Head) -> None:
    """The kubelet's order when a pod is deleted: the collector (no hook of its own) is signalled as the Ray
    container's hook starts; the collector answers the hook once the snapshot is stored."""
    head.dashboard.status = "FAILED"
    hooked: list[httpx.Response] = []
    head.process.send_signal(signal.SIGTERM)
    hook = threading.Thread(target=lambda: hooked.append(head.pre_stop()))
    hook.start()
    hook.join(120)
    head.dashboard.stop()
    assert head.process.wait(90) == 0
    assert hooked and hooked[0].status_code == 200, hooked
    assert head.stored_status() == "FAILED"
    record = head.end_record()
    assert record["reason"] in ("SIGTERM", "preStop")  # whichever the collector saw first
    assert record["finalSnapshot"] == {"succeeded": True, "unanswered": []}
    assert record["finalUpload"] == "done"


def test_a_dashboard_gone_first_leaves_an_end_record_saying_the_final_snapshot_failed(head: Head) -> None:
    head.dashboard.status = "SUCCEEDED"
    head.dashboard.stop()  # a head container without the hook: its dashboard went with the SIGTERM
    head.process.send_signal(signal.SIGTERM)
    assert head.process.wait(90) == 0
    assert head.stored_status() == "RUNNING"  # the last snapshot is kept, and the record says it is stale
    record = head.end_record()
    assert record["reason"] == "SIGTERM" and record["finalUpload"] == "done"
    assert record["finalSnapshot"] == {"succeeded": False, "unanswered": list(ENDPOINTS)}


def test_a_restarted_ray_containers_session_is_recorded_over_and_the_next_one_snapshotted(head: Head) -> None:
    """The kubelet runs the hook when it restarts the Ray container too (a failed liveness probe): Ray then
    starts a new session, whose dashboard the collector snapshots again, and the old one's record is final."""
    head.dashboard.status = "SUCCEEDED"
    assert head.pre_stop().status_code == 200
    assert head.end_record()["finalUpload"] == "pending"
    ray_root = head.logs.parent.parent
    logs = ray_root / NEXT_SESSION / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text(f"[raylet] main.cc:711: Setting node ID node_id={NODE_ID}\n")
    (ray_root / "session_latest").unlink()
    (ray_root / "session_latest").symlink_to(NEXT_SESSION)
    head.dashboard.status = "RUNNING"  # the restarted head's next job
    jobs = head.store / CLUSTER.endpoints_dir("", NEXT_SESSION) / "restful__api__jobs"
    eventually(jobs.is_file, 60, "the new session snapshotted", every=0.1)
    assert head.end_record()["finalUpload"] == "done"
    assert head.stored_status() == "SUCCEEDED"  # the old session's last word is kept


def test_a_composed_hook_asks_the_collector_then_does_what_the_users_hook_did(tmp_path: Path) -> None:
    """The hook the operator builds when the head already has a preStop hook, run as the kubelet runs an
    exec hook: the collector is asked (and waited for) first, then the user's command or HTTP request; a
    collector that does not answer does not keep the user's hook from running."""
    order = tmp_path / "order"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with order.open("a") as f:
                f.write(self.path + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    user_exec = {"exec": {"command": [sys.executable, "-c", f"open({str(order)!r}, 'a').write('user\\n')"]}}
    user_http = {"httpGet": {"host": "127.0.0.1", "port": port, "path": "/drain"}}

    def run(hook: dict[str, object], collector_port: int) -> None:
        ray: dict[str, object] = {"lifecycle": {"preStop": hook}}
        collector.add_head_pre_stop(ray)
        command = ray["lifecycle"]["preStop"]["exec"]["command"]  # type: ignore[index]
        command[3] = command[3].replace(":8084/", f":{collector_port}/")  # the test's free port
        command[0] = sys.executable  # the image's `python`
        subprocess.run(command, check=True, timeout=60)

    try:
        run(user_exec, port)
        run(user_http, port)
        assert order.read_text().splitlines() == [
            "/v1/final-snapshot",
            "user",
            "/v1/final-snapshot",
            "/drain",
        ]
        order.unlink()
        run(user_exec, free_port())  # nobody listens there
        assert order.read_text() == "user\n"
    finally:
        server.shutdown()
        server.server_close()
