"""The History Server's costs: upload lag, the server's memory as stored sessions add up, and the answer
time for a large log file. Real processes (`kuberay-history-collector`, `kuberay-history-server`) over a
local directory; the Ray side is a session directory laid out as Ray lays it out, so no Ray runs.

    python -m benchmarks.history [--lines 20] [--sessions 100] [--log-mb 200]

Prints one JSON line per measurement; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from kuberay.history import layout
from kuberay.history.storage import LocalDirectory
from kuberay.local.ports import free_port

BIN = Path(sys.executable).parent
SESSION = "session_2026-01-02_03-04-05_678901_42"
NODE = "ab" * 28


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_server(store: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [str(BIN / "kuberay-history-server"), "--host", "127.0.0.1", "--port", "0", "--storage-backend", "local",
         "--storage-local-dir", str(store), *args],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    return process, process.stdout.readline().split()[-1]


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(60)
    if process.stdout is not None:
        process.stdout.close()


def upload_lag(root: Path, lines: int, push_interval: str) -> dict[str, object]:
    """A line written to a Ray log until the server answers it (the collector's push interval bounds it)."""
    cluster = layout.ClusterRef("bench", "lag", "RayJob", "lag")
    ray_root, store = root / f"ray-{push_interval}", root / f"store-{push_interval}"
    logs = ray_root / SESSION / "logs"
    logs.mkdir(parents=True)
    (ray_root / "session_latest").symlink_to(SESSION)
    (logs / "raylet.out").write_text(f"Setting node ID node_id={NODE}\n")
    LocalDirectory(store).put(cluster.metadata_key("", SESSION), b"{}")
    env = {**os.environ, "RAY_CLUSTER_NAME": cluster.name, "RAY_CLUSTER_NAMESPACE": cluster.namespace,
           "OWNER_KIND": "RayJob", "OWNER_NAME": cluster.owner_name, "RAY_ROLE": "Worker",
           "EVENTS_PORT": str(free_port()), "RAY_TMP_ROOT": str(ray_root), "FQ_RAY_IP": "127.0.0.1:1",
           "STORAGE_BACKEND": "local", "STORAGE_LOCAL_DIR": str(store), "PUSH_INTERVAL": push_interval}  # fmt: skip
    collector = subprocess.Popen([str(BIN / "kuberay-history-collector")], env=env, stderr=subprocess.DEVNULL)
    server, url = start_server(store)
    lags = []
    try:
        with httpx.Client(base_url=url, timeout=10) as http:
            http.get(f"/enter_cluster/bench/rayjob/{cluster.owner_name}")
            log = logs / "worker-bench-01000000-1.out"
            for i in range(lines):
                marker = f"line {i} at {time.time_ns()}"
                start = time.monotonic()
                with log.open("a") as f:
                    f.write(marker + "\n")
                query = {"node_id": NODE, "filename": log.name, "lines": 1}
                while marker not in http.get("/api/v0/logs/file", params=query).text:
                    time.sleep(0.02)
                lags.append(time.monotonic() - start)
    finally:
        stop(server)
        collector.send_signal(signal.SIGTERM)
        collector.wait(60)
    return {"measure": "upload_lag_s", "push_interval": push_interval, "lines": lines,
            "median": round(statistics.median(lags), 3), "max": round(max(lags), 3)}  # fmt: skip


def stored_session(storage: LocalDirectory, index: int, tasks: int) -> layout.ClusterRef:
    """A session with the answers a small job leaves: `tasks` tasks, jobs, nodes, and a few log files."""
    cluster = layout.ClusterRef("bench", f"c{index}-abcde", "RayJob", f"job{index}")
    session = SESSION
    storage.put(cluster.metadata_key("", session), b"{}")
    endpoints = cluster.endpoints_dir("", session)
    task_list = [{"task_id": f"{index:04d}{t:08d}", "name": "work", "func_or_class_name": "work", "type": "NORMAL_TASK",
                  "state": "FINISHED", "job_id": "02000000", "node_id": NODE, "start_time_ms": t, "end_time_ms": t + 5,
                  "required_resources": {"CPU": 1}, "worker_id": "w" * 56, "error_message": None} for t in range(tasks)]  # fmt: skip
    answers = {
        "/api/jobs/": [
            {
                "job_id": "02000000",
                "submission_id": f"job{index}-x",
                "status": "FAILED",
                "driver_node_id": NODE,
            }
        ],
        "/api/v0/tasks": {
            "result": True,
            "msg": "",
            "data": {"result": {"total": tasks, "result": task_list}},
        },
        "/nodes": {
            "result": True,
            "data": {"summary": [{"ip": "10.0.0.5", "raylet": {"nodeId": NODE, "isHeadNode": True}}]},
        },
    }
    for path, body in answers.items():
        storage.put(f"{endpoints}/{layout.endpoint_key(path)}", json.dumps(body).encode())
    logs = cluster.logs_dir("", session, NODE)
    storage.put(f"{logs}/job-driver-job{index}-x.log", b"driver output\n" * 2000)
    return cluster


def server_memory(root: Path, sessions: int, tasks: int, cache: str) -> dict[str, object]:
    """The server's RSS after each session's main routes were asked once, as sessions add up."""
    store = root / f"sessions-{cache}"
    storage = LocalDirectory(store)
    clusters = [stored_session(storage, i, tasks) for i in range(sessions)]
    server, url = start_server(store, "--session-cache-max-memory", cache)
    rss = {"started": round(rss_mib(server.pid), 1)}
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            for i, cluster in enumerate(clusters, 1):
                http.get(f"/enter_cluster/bench/rayjob/{cluster.owner_name}")
                for path in (
                    "/api/jobs/",
                    "/api/v0/tasks?limit=100",
                    "/api/v0/tasks/summarize",
                    "/nodes?view=summary",
                ):
                    http.get(path).raise_for_status()
                http.get(
                    "/api/v0/logs/file", params={"submission_id": f"job{i - 1}-x", "lines": 1000}
                ).raise_for_status()
                if i in (1, 10, 25, 50, 100) or i == sessions:
                    rss[str(i)] = round(rss_mib(server.pid), 1)
    finally:
        stop(server)
    stored_mb = sum(p.stat().st_size for p in store.rglob("*") if p.is_file()) / 2**20
    return {"measure": "server_rss_mib", "sessions": sessions, "tasks_per_session": tasks, "cache": cache,
            "stored_mib": round(stored_mb, 1), "rss_after_sessions": rss}  # fmt: skip


def large_log(root: Path, megabytes: int) -> dict[str, object]:
    """Answer time for the tail (Ray's default 1000 lines) and the whole of a large stored log file."""
    store = root / "large"
    storage = LocalDirectory(store)
    cluster = layout.ClusterRef("bench", "big", "RayJob", "big")
    storage.put(cluster.metadata_key("", SESSION), b"{}")
    key = f"{cluster.logs_dir('', SESSION, NODE)}/worker-big.out"
    path = store / key
    path.parent.mkdir(parents=True, exist_ok=True)
    line = b"x" * 99 + b"\n"
    with path.open("wb") as f:
        for _ in range(megabytes * 10486):
            f.write(line)
    server, url = start_server(store)
    result: dict[str, object] = {
        "measure": "large_log_answer_s",
        "file_mib": round(path.stat().st_size / 2**20),
    }
    try:
        with httpx.Client(base_url=url, timeout=600) as http:
            http.get("/enter_cluster/bench/rayjob/big")
            for name, lines in (("tail_1000_lines", 1000), ("whole_file", -1)):
                start = time.monotonic()
                size = 0
                with http.stream(
                    "GET",
                    "/api/v0/logs/file",
                    params={"node_id": NODE, "filename": "worker-big.out", "lines": lines},
                ) as reply:
                    for chunk in reply.iter_bytes():
                        size += len(chunk)
                result[name] = round(time.monotonic() - start, 3)
                result[f"{name}_bytes"] = size
            result["server_rss_mib_after"] = round(rss_mib(server.pid), 1)
    finally:
        stop(server)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--log-mb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="history-bench-") as directory:
        root = Path(directory)
        for interval in ("1s", "5s"):
            print(json.dumps(upload_lag(root, args.lines, interval)), flush=True)
        for cache in ("256Mi", "16Mi"):
            print(json.dumps(server_memory(root, args.sessions, args.tasks, cache)), flush=True)
        print(json.dumps(large_log(root, args.log_mb)), flush=True)


if __name__ == "__main__":
    main()
