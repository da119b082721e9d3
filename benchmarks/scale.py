"""How fast the operator turns RayClusters into ready clusters, next to the limit measured in the same run.

    python -m benchmarks.scale --clusters N [--workers 3] [--concurrency C] [--rate 100] [--qps 100 --burst 200]

Starts localkube (simulate mode: pods become Running and Ready as soon as they are bound) and the
operator as separate processes, each phase on a fresh localkube:
1. the recording: the operator phase below, with localkube's audit log recording every write;
2. the limit: the recorded writes in the benchmark's namespace (the operator's pods, Services, status
   writes and Events, and the RayCluster creates) replayed as fast as C requests in flight allow
   (benchmarks/replay.py), so localkube's rate for the request mix this operator sends, in pods per second;
3. the operator: N RayClusters of 1 head + W workers are created at `--rate` per second; we watch until
   every one reports `status.state: ready`, noting each one's time from creation to ready.
Prints one JSON line: clusters, pods, operator_pods_per_s, limit_pods_per_s, ratio, replayed_writes,
replay_failed (writes the fresh server refused), replay_s and replay_localkube_cpu_s, ready_p50_s,
ready_p99_s, floor_p50_s and floor_p99_s (the latencies the operator's own client rate allows at best, for
clusters served in the order they came: near them, the run is client-rate-bound), create_s (until the
last RayCluster create was answered; N / rate when localkube keeps up), operator_rss_mb, operator_cpu_s
(since its start), operator_idle_rss_mb, rss_per_pod_kb, cpu_ms_per_pod (the operator's CPU in the
operator phase per pod), and, to show which process bounds the run, localkube_cpu_s and elapsed_s of the
operator phase.
With `--skip-limit` only the operator phase runs (no limit fields); with `--source DIR` its localkube and
operator run from another checkout, e.g. a worktree of a baseline commit, to compare two commits' operators
(ready p50/p99) by running this command once with `--source` and once without. `--audit-dir DIR` keeps an
audit log of every request of the measured phase (to trace a run that stalls, with `--ready-timeout` to end
it).
Nothing is asserted: this measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import orjson
import yaml

from benchmarks import replay
from benchmarks.processes import stop_group, wait_ready
from benchmarks.procstat import read_stat
from kuberay.api import crd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.localkube_process import LocalKubeProcess  # noqa: E402

# The operator's command line before its flags; benchmarks.peer.scale gives upstream's binary instead.
OURS = (sys.executable, "-m", "kuberay.operator")
BENCH_NAMESPACE = "bench"
T = TypeVar("T")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def checkout(source: Path | None) -> Iterator[None]:
    """Child processes started inside run `source`'s code (its `src` first on their PYTHONPATH; the same
    virtualenv serves both checkouts); None: this checkout's."""
    if source is None:
        yield
        return
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source / "src"), previous]))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous


class Cluster:
    """localkube and the operator as child processes, and an HTTP client with admin credentials."""

    def __init__(
        self, workdir: Path, concurrency: int, qps: float, burst: int, operator: Sequence[str] = OURS
    ) -> None:
        self.workdir = workdir
        self.operator_command = list(operator)
        self.concurrency = concurrency
        self.qps, self.burst = qps, burst
        self.localkube: LocalKubeProcess | None = None
        self.operator: subprocess.Popen[bytes] | None = None
        self.health_port = _free_port()

    def start_localkube(self, *extra_args: str) -> None:
        self.localkube = LocalKubeProcess(self.workdir / "localkube", extra_args=extra_args).start()
        self.kubeconfig = self.localkube.kubeconfig
        self.localkube.apply(crd.crds())

    @property
    def localkube_pid(self) -> int:
        assert self.localkube is not None and self.localkube.process is not None
        return self.localkube.process.pid

    def client(self) -> httpx.AsyncClient:
        limits = httpx.Limits(
            max_connections=self.concurrency + 4, max_keepalive_connections=self.concurrency + 4
        )
        assert self.localkube is not None
        return httpx.AsyncClient(
            base_url=self.localkube.url,
            verify=self.localkube.ssl_context(),
            headers={"Authorization": f"Bearer {self.localkube.token}"},
            # No limit on the wait for a free connection: the creates sent on schedule queue there when
            # localkube answers slower than they come; each answer still has 60 s.
            timeout=httpx.Timeout(60, pool=None),
            limits=limits,
        )

    def endpoint(self) -> replay.Endpoint:
        """Where `benchmarks/replay.py` sends its writes: the same server and credentials as `client()`."""
        assert self.localkube is not None
        return replay.Endpoint(self.localkube.url, self.localkube.ssl_context(), self.localkube.token)

    def start_operator(self) -> None:
        with (self.workdir / "operator.log").open("wb") as log:
            self.operator = subprocess.Popen(
                [*self.operator_command, "--kubeconfig", str(self.kubeconfig),
                 "--enable-leader-election=false", "--metrics-addr", f"127.0.0.1:{_free_port()}",
                 "--health-probe-bind-address", f"127.0.0.1:{self.health_port}",
                 "--reconcile-concurrency", str(self.concurrency), "--log-stdout-encoder", "json",
                 "--qps", str(self.qps), "--burst", str(self.burst)],
                stdout=log, stderr=log, start_new_session=True,
            )  # fmt: skip
        if not wait_ready(self.operator, f"http://127.0.0.1:{self.health_port}/readyz", 60):
            raise RuntimeError(f"the operator did not become ready; see {self.workdir / 'operator.log'}")

    def stop(self) -> None:
        stop_group(self.operator)
        if self.localkube is not None:
            self.localkube.stop()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _create_namespace(client: httpx.AsyncClient, name: str) -> None:
    response = await client.post(
        "/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    if response.status_code not in (201, 409):
        raise RuntimeError(f"cannot create namespace {name}: {response.text}")


def _raycluster(name: str, workers: int) -> dict[str, Any]:
    container = {
        "name": "ray-head",
        "image": "rayproject/ray:2.46.0",
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
    }
    worker = {**container, "name": "ray-worker"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
            "workerGroupSpecs": [
                {"groupName": "small", "replicas": workers, "minReplicas": 0, "maxReplicas": workers,
                 "rayStartParams": {}, "template": {"spec": {"containers": [worker]}}}
            ],
        },
    }  # fmt: skip


def client_rate_floor(created: Sequence[float], pods: int, qps: float, burst: int) -> list[float]:
    """Each cluster's ready latency no operator serving clusters in order of arrival could beat when its pod
    creates pass one token bucket of `qps` and `burst` (client-go's, upstream's and ours per kind), given the
    seconds after the start at which each cluster was created: its last pod is the `pods * (i + 1)`th
    create, which the bucket admits `(n - burst) / qps` seconds after the start at the earliest."""
    return sorted(max(0.0, (pods * (i + 1) - burst) / qps - at) for i, at in enumerate(created))


def _p99(ordered: Sequence[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def measure_operator(
    cluster: Cluster, clusters: int, workers: int, rate: float, timeout: float | None = None
) -> dict[str, Any]:
    assert cluster.operator is not None and cluster.localkube is not None
    pid = cluster.operator.pid
    localkube_cpu_before = read_stat(cluster.localkube_pid).cpu_seconds
    operator_cpu_before = read_stat(pid).cpu_seconds
    created: dict[str, float] = {}
    ready: dict[str, float] = {}
    async with cluster.client() as client:
        await _create_namespace(client, BENCH_NAMESPACE)
        all_ready = asyncio.Event()

        async def watch() -> None:
            params = {"watch": "true", "resourceVersion": "0", "allowWatchBookmarks": "true"}
            async with client.stream(
                "GET",
                f"/apis/ray.io/v1/namespaces/{BENCH_NAMESPACE}/rayclusters",
                params=params,
                timeout=None,
            ) as stream:
                async for line in stream.aiter_lines():
                    if not line:
                        continue
                    event = orjson.loads(line)
                    obj = event.get("object") or {}
                    name = (obj.get("metadata") or {}).get("name")
                    if name and (obj.get("status") or {}).get("state") == "ready" and name not in ready:
                        ready[name] = time.perf_counter()
                        if len(ready) == clusters:
                            all_ready.set()
                            return

        async def create(name: str) -> None:
            body = orjson.dumps(_raycluster(name, workers))
            created[name] = time.perf_counter()
            response = await client.post(
                f"/apis/ray.io/v1/namespaces/{BENCH_NAMESPACE}/rayclusters",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            if response.status_code != 201:
                raise RuntimeError(f"RayCluster create failed: {response.status_code} {response.text}")

        watcher = asyncio.create_task(watch())
        started = time.perf_counter()
        # Each create is sent on schedule without waiting for the one before: awaited one by one, the
        # arrival rate fell to 1 / (localkube's answer time) whenever that exceeded 1 / rate, and a slower
        # arrival flatters whichever operator ran then (runs of 25 and 100 clusters/s were compared).
        creating = []
        for i in range(clusters):
            delay = started + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            creating.append(asyncio.create_task(create(f"bench-{i:05d}")))
        await asyncio.gather(*creating)
        create_s = time.perf_counter() - started
        await asyncio.wait_for(all_ready.wait(), timeout=timeout or max(600.0, clusters * 2.0))
        finished = time.perf_counter()
        watcher.cancel()
    latencies = sorted(ready[name] - created[name] for name in created)
    floor = client_rate_floor(
        [created[name] - started for name in created], workers + 1, cluster.qps, cluster.burst
    )
    pods = clusters * (workers + 1)
    operator_cpu = read_stat(pid).cpu_seconds
    return {
        "operator_pods_per_s": pods / (finished - started),
        "ready_p50_s": statistics.median(latencies),
        "ready_p99_s": _p99(latencies),
        "create_s": create_s,
        "floor_p50_s": statistics.median(floor),
        "floor_p99_s": _p99(floor),
        "operator_rss_mb": _rss_mb(pid),
        "operator_cpu_s": operator_cpu,
        "operator_phase_cpu_s": operator_cpu - operator_cpu_before,
        "localkube_cpu_s": read_stat(cluster.localkube_pid).cpu_seconds - localkube_cpu_before,
        "elapsed_s": finished - started,
    }


async def record(args: argparse.Namespace, workdir: Path, operator: Sequence[str]) -> list[replay.Write]:
    """Runs the operator phase with localkube's audit log on; returns the writes it recorded in `bench`."""
    workdir.mkdir()
    policy, audit_log = workdir / "audit-policy.yaml", workdir / "audit.log"
    policy.write_text(yaml.safe_dump(replay.POLICY))
    cluster = Cluster(workdir, args.concurrency, args.qps, args.burst, operator)
    try:
        cluster.start_localkube("--audit-log-path", str(audit_log), "--audit-policy-file", str(policy))
        cluster.start_operator()
        await measure_operator(cluster, args.clusters, args.workers, args.rate)
    finally:
        cluster.stop()
    return replay.recorded_writes(audit_log, BENCH_NAMESPACE)


async def timed_replay(
    cluster: Cluster, writes: list[replay.Write], concurrency: int
) -> tuple[replay.Replay, float, float]:
    """Replays `writes` on `cluster`'s localkube: the replay (its `failed`), the seconds it took, and
    localkube's CPU seconds meanwhile."""
    replaying, elapsed, cpu = await replay_on(
        cluster.endpoint(), writes, concurrency, [cluster.localkube_pid]
    )
    return replaying, elapsed, cpu[cluster.localkube_pid]


async def replay_on(
    endpoint: replay.Endpoint, writes: list[replay.Write], concurrency: int, pids: Sequence[int]
) -> tuple[replay.Replay, float, dict[int, float]]:
    """Replays `writes` to `endpoint`: the replay, the seconds it took, and the CPU seconds each of the
    server's processes `pids` used meanwhile."""
    replaying = replay.Replay(endpoint, writes)
    before = {pid: read_stat(pid).cpu_seconds for pid in pids}
    elapsed = await replaying.run(concurrency)
    return replaying, elapsed, {pid: read_stat(pid).cpu_seconds - before[pid] for pid in pids}


async def measure_limit(
    args: argparse.Namespace, workdir: Path, writes: list[replay.Write]
) -> dict[str, Any]:
    """Replays `writes` on a fresh localkube with `--concurrency` in flight: the limit, in pods per second."""
    workdir.mkdir()
    cluster = Cluster(workdir, args.concurrency, args.qps, args.burst)
    try:
        cluster.start_localkube()
        async with cluster.client() as client:
            await _create_namespace(client, BENCH_NAMESPACE)
            # As long as the operator phase gives a fresh localkube (its start-up and idle RSS reading):
            # right after its start, localkube's own start-up work would be counted against the limit.
            await asyncio.sleep(3)
            replaying, elapsed, cpu = await timed_replay(cluster, writes, args.concurrency)
    finally:
        cluster.stop()
    pods = args.clusters * (args.workers + 1)
    return {
        "limit_pods_per_s": pods / elapsed,
        "replayed_writes": len(writes),
        "replay_failed": replaying.failed,
        "replay_s": elapsed,
        "replay_localkube_cpu_s": cpu,
    }


def _full_audit(directory: Path | None) -> list[str]:
    """localkube's flags for an audit log of every request, reads and watches too (Metadata level: who, what,
    the answer's code), in `directory`; none without one."""
    if directory is None:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "audit-policy.yaml"
    policy.write_text(
        yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Metadata"}]})
    )
    return ["--audit-log-path", str(directory / "audit.log"), "--audit-policy-file", str(policy)]


async def run(args: argparse.Namespace, workdir: Path, operator: Sequence[str] = OURS) -> dict[str, Any]:
    limit: dict[str, Any] = {}
    if not args.skip_limit:
        writes = await record(args, workdir / "record", operator)
        limit = await measure_limit(args, workdir / "replay", writes)
    cluster = Cluster(workdir / "measure", args.concurrency, args.qps, args.burst, operator)
    workdir.joinpath("measure").mkdir()
    try:
        with checkout(args.source):
            cluster.start_localkube(*_full_audit(args.audit_dir))
            cluster.start_operator()
        assert cluster.operator is not None
        await asyncio.sleep(2)
        idle_rss = _rss_mb(cluster.operator.pid)
        result = await measure_operator(cluster, args.clusters, args.workers, args.rate, args.ready_timeout)
    finally:
        cluster.stop()
    pods = args.clusters * (args.workers + 1)
    limits = {}
    if limit:
        limits = {
            "limit_pods_per_s": round(limit["limit_pods_per_s"], 1),
            "ratio": round(result["operator_pods_per_s"] / limit["limit_pods_per_s"], 3),
            "replayed_writes": limit["replayed_writes"],
            "replay_failed": limit["replay_failed"],
            "replay_s": round(limit["replay_s"], 1),
            "replay_localkube_cpu_s": round(limit["replay_localkube_cpu_s"], 1),
        }
    return {
        "clusters": args.clusters,
        "operator_qps": args.qps,
        "pods": pods,
        "operator_pods_per_s": round(result["operator_pods_per_s"], 1),
        **limits,
        "ready_p50_s": round(result["ready_p50_s"], 3),
        "ready_p99_s": round(result["ready_p99_s"], 3),
        "create_s": round(result["create_s"], 1),
        "floor_p50_s": round(result["floor_p50_s"], 3),
        "floor_p99_s": round(result["floor_p99_s"], 3),
        "operator_rss_mb": round(result["operator_rss_mb"], 1),
        "operator_cpu_s": round(result["operator_cpu_s"], 1),
        "operator_idle_rss_mb": round(idle_rss, 1),
        "localkube_cpu_s": round(result["localkube_cpu_s"], 1),
        "elapsed_s": round(result["elapsed_s"], 1),
        "rss_per_pod_kb": round((result["operator_rss_mb"] - idle_rss) * 1024 / pods, 2),
        "cpu_ms_per_pod": round(result["operator_phase_cpu_s"] * 1000 / pods, 2),
    }


def arguments(description: str | None = __doc__) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--rate", type=float, default=100.0, help="RayClusters created per second")
    parser.add_argument(
        "--qps", type=float, default=100.0, help="the operator's client rate (upstream's default)"
    )
    parser.add_argument(
        "--burst", type=int, default=200, help="the operator's client burst (upstream's default)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the working directory (logs)")
    parser.add_argument(
        "--skip-limit", action="store_true", help="the operator phase alone (no recording, no replay)"
    )
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="run the measured phase's localkube and operator from this checkout (e.g. a baseline worktree)",
    )
    parser.add_argument(
        "--audit-dir",
        type=Path,
        default=None,
        help="the measured phase's localkube logs every request, reads and watches too, to DIR/audit.log",
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=None,
        help="seconds the measured phase waits for every cluster to be ready (default: 2 per cluster, 600 at least)",
    )
    return parser


def in_workdir(prefix: str, keep: bool, work: Callable[[Path], Coroutine[Any, Any, T]]) -> T:
    """Runs `work` in a fresh temporary directory, removed afterwards unless `keep` (then its path is told)."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        return asyncio.run(work(workdir))
    finally:
        if keep:
            print(f"logs in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def measure(args: argparse.Namespace, operator: Sequence[str] = OURS) -> dict[str, Any]:
    """One run on a fresh localkube in a fresh working directory (kept with --keep)."""
    return in_workdir("kuberay-scale-", args.keep, lambda workdir: run(args, workdir, operator))


def main() -> None:
    print(json.dumps(measure(arguments().parse_args())), flush=True)


if __name__ == "__main__":
    main()
