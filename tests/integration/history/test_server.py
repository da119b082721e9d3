"""`kuberay-history-server` as a user starts it, over a directory holding two stored sessions in the
collector's layout (answers in the shapes Ray's dashboard gives; the end-to-end test stores real ones):
listing and entering sessions, the routes Ray's frontend asks, log files and tails, Ray's frontend files,
and the token."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from integration.kubectl.conftest import run_plugin
from kuberay.history import layout
from kuberay.history.storage import LocalDirectory
from support.history_processes import HistoryServer

OLD, NEW = "session_2026-01-01_00-00-00_000001_1", "session_2026-01-02_00-00-00_000001_1"
CLUSTER = layout.ClusterRef("team-a", "train-abc12", "RayJob", "train")
NODE = "cd" * 28


def _tasks() -> dict[str, object]:
    tasks = [{"task_id": f"t{i}", "name": "square", "func_or_class_name": "square", "type": "NORMAL_TASK",
              "state": "FINISHED", "job_id": "02000000", "node_id": NODE, "start_time_ms": 1000 + i, "end_time_ms": 1010 + i}
             for i in range(4)]  # fmt: skip
    tasks.append({"task_id": "t9", "name": "fails", "func_or_class_name": "fails", "type": "NORMAL_TASK", "state": "FAILED",
                  "job_id": "02000000", "node_id": NODE,
                  "task_log_info": {"stdout_file": f"/tmp/ray/{NEW}/logs/worker-w-02000000-7.out", "stdout_start": 6, "stdout_end": 12}})  # fmt: skip
    return {"result": True, "msg": "", "data": {"result": {"total": 5, "result": tasks}}}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store")
    storage = LocalDirectory(root)
    for session in (OLD, NEW):
        storage.put(CLUSTER.metadata_key("", session), b"{}")
    endpoints = CLUSTER.endpoints_dir("", NEW)
    answers = {
        "/api/jobs/": [
            {"job_id": "02000000", "submission_id": "train-x1", "status": "FAILED", "driver_node_id": NODE}
        ],
        "/api/v0/tasks": _tasks(),
        "/nodes": {
            "result": True,
            "data": {"summary": [{"ip": "10.0.0.5", "raylet": {"nodeId": NODE, "isHeadNode": True}}]},
        },
        "/api/cluster_status": {"result": True, "msg": "", "data": {"clusterStatus": "stored"}},
    }
    for path, body in answers.items():
        storage.put(f"{endpoints}/{layout.endpoint_key(path)}", json.dumps(body).encode())
    logs = CLUSTER.logs_dir("", NEW, NODE)
    storage.put(f"{logs}/job-driver-train-x1.log", b"".join(b"line %d\n" % i for i in range(5000)))
    storage.put(f"{logs}/worker-w-02000000-7.out", b"other task output\n")
    storage.put(f"{logs}/raylet.out", b"raylet\n")
    return root


@pytest.fixture(scope="module")
def server(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HistoryServer]:
    log = tmp_path_factory.mktemp("server") / "server.log"
    server = HistoryServer(log, {"STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": str(store)}).start()
    yield server
    server.stop()


def test_sessions_are_listed_newest_first_and_entered_by_cookie(server: HistoryServer) -> None:
    with server.client() as http:
        listed = http.get("/clusters").json()
        assert [(c["sessionName"], c["ownerKind"], c["ownerName"], c["name"]) for c in listed] == [
            (NEW, "rayjob", "train", CLUSTER.name), (OLD, "rayjob", "train", CLUSTER.name)]  # fmt: skip
        refused = http.get("/api/jobs/")
        assert refused.status_code == 400 and "/enter_cluster/" in refused.text
        assert http.get("/enter_cluster/team-a/rayjob/nope").status_code == 404
        assert "unsupported resource kind" in http.get("/enter_cluster/team-a/pod/train").text
        assert http.get(f"/enter_cluster/team-a/rayjob/train/{OLD}").json()["session"] == OLD
        assert http.get("/api/jobs/").status_code == 404  # the old session stored no jobs
        entered = http.get("/enter_cluster/team-a/rayjob/train")  # the latest
        assert entered.json()["session"] == NEW and http.cookies["session_name"] == NEW
        assert http.get("/api/jobs/train-x1").json()["status"] == "FAILED"
        assert http.get("/api/cluster_status").json()["data"]["clusterStatus"] == "stored"  # stored verbatim
        # Not collected: Ray's empty shape, as upstream answers it; a path with none stays a 404.
        assert http.get("/api/serve/applications/").json() == {"applications": {}}
        assert http.get("/api/v0/cluster_metadata").status_code == 404


def test_tasks_are_filtered_summarized_and_timed_as_rays(server: HistoryServer) -> None:
    with server.client() as http:
        http.get("/enter_cluster/team-a/rayjob/train")
        failed = http.get(
            "/api/v0/tasks",
            params={"filter_keys": "state", "filter_predicates": "=", "filter_values": "FAILED"},
        )
        assert [t["name"] for t in failed.json()["data"]["result"]["result"]] == ["fails"]
        limited = http.get("/api/v0/tasks", params={"limit": 2}).json()["data"]["result"]
        assert (limited["total"], len(limited["result"])) == (5, 2)
        bad = http.get(
            "/api/v0/tasks", params={"filter_keys": "state", "filter_predicates": "~", "filter_values": "x"}
        )
        assert bad.status_code == 400 and "unsupported filter predicate" in bad.json()["msg"]
        summary = http.get("/api/v0/tasks/summarize").json()["data"]["result"]["result"]["node_id_to_summary"]
        assert summary["cluster"]["summary"]["fails"]["state_counts"] == {"FAILED": 1}
        assert (
            len(http.get("/api/v0/tasks/timeline", params={"job_id": "02000000"}).json()) == 4
        )  # those that ran


def test_logs_are_listed_read_whole_tailed_and_found_by_job_or_task(server: HistoryServer) -> None:
    with server.client() as http:
        http.get("/enter_cluster/team-a/rayjob/train")
        listed = http.get("/api/v0/logs", params={"node_ip": "10.0.0.5"}).json()["data"]["result"]
        assert listed == {"internal": ["job-driver-train-x1.log"], "worker_out": ["worker-w-02000000-7.out"],
                          "raylet": ["raylet.out"]}  # fmt: skip
        tail = http.get(
            "/api/v0/logs/file", params={"node_id": NODE, "filename": "job-driver-train-x1.log", "lines": 3}
        )
        assert tail.text == "line 4997\nline 4998\nline 4999\n"
        whole = http.get("/api/v0/logs/file", params={"submission_id": "train-x1", "lines": -1}).text
        assert whole.count("\n") == 5000 and whole.startswith("line 0\n")
        assert http.get("/api/v0/logs/file", params={"task_id": "t9"}).text == "task o"  # its byte range
        missing = http.get("/api/v0/logs/file", params={"node_id": NODE, "filename": "nope.log"})
        assert missing.status_code == 404 and "nope.log" in missing.text


def test_rays_frontend_is_served(server: HistoryServer) -> None:
    with server.client() as http:
        page = http.get("/")
        assert page.status_code == 200 and '<div id="root">' in page.text
        script = page.text.split('src="')[1].split('"')[0]
        assert http.get(script).status_code == 200


def test_the_token_guards_everything_but_health_and_login(store: Path, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cr3t-token\n")
    env = {"STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": str(store)}
    server = HistoryServer(tmp_path / "server.log", env, "--auth-token-file", str(token)).start()
    try:
        with server.client() as http:
            assert http.get("/livez").status_code == 200
            assert http.get("/api/authentication_mode").json() == {"authentication_mode": "token"}
            assert http.get("/clusters").status_code == 401
            assert http.get("/clusters", headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert (
                http.get("/clusters", headers={"X-Ray-Authorization": "Bearer s3cr3t-token"}).status_code
                == 200
            )
            assert (
                http.post("/api/authenticate", headers={"Authorization": "Bearer wrong"}).status_code == 403
            )
            assert (
                http.post("/api/authenticate", headers={"Authorization": "Bearer s3cr3t-token"}).status_code
                == 200
            )
            assert http.get("/clusters").status_code == 200  # the cookie Ray's frontend keeps
        assert "s3cr3t" not in server.log.read_text()
    finally:
        server.stop()


def test_kubectl_ray_lists_stored_sessions_and_links_the_dashboard(
    server: HistoryServer, localkube: Any
) -> None:
    def plugin(*args: str) -> subprocess.CompletedProcess[str]:
        return run_plugin(localkube.kubeconfig, *args, "--history-server", server.url)

    listed = plugin("history", "-n", "team-a")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[0] == ["NAMESPACE", "TYPE/NAME", "RAY", "CLUSTER", "SESSION", "CREATED"]
    assert [(r[1], r[3]) for r in rows[1:]] == [("rayjob/train", NEW), ("rayjob/train", OLD)]
    assert (
        "No stored sessions of rayjob/other in namespace team-a"
        in plugin("history", "rayjob/other", "-n", "team-a").stdout
    )
    assert "No stored sessions" in plugin("history", "-n", "default").stdout
    assert len(plugin("history", "-A").stdout.splitlines()) == 3
    opened = plugin("session", "--history", "rayjob/train", "-n", "team-a")
    assert opened.returncode == 0, opened.stderr
    link = opened.stdout.splitlines()[-1]
    with server.client() as http:
        followed = http.get(link.removeprefix(server.url), follow_redirects=True)
        assert followed.status_code == 200 and '<div id="root">' in followed.text
        assert http.cookies["session_name"] == NEW
    missing = plugin("session", "--history", "rayjob/other", "-n", "team-a")
    assert (
        missing.returncode == 1 and "no stored session of rayjob/other in namespace team-a" in missing.stderr
    )
