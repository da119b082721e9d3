"""localkube beside the real Kubernetes control plane, on the same recorded request mix, in turn.

    python -m benchmarks.peer.controlplane [--clusters 1000] [--rounds 2] [benchmarks.scale's flags]

Records the operator's writes once (`benchmarks.scale`'s operator phase with localkube's audit log), then
replays them (`benchmarks/replay.py`, `--concurrency` in flight) on a fresh localkube and on a fresh real
control plane in turn (A B A B ...): etcd, kube-apiserver, kube-controller-manager and kube-scheduler as
`scripts/realkube build` makes them, with `localkube agent` (simulate mode) as the node, started as the
test suite's real-Kubernetes backend starts them. Each side then settles: the replay ends when its last
write is answered, the pods are all `Running` a little later (the scheduler and the node work behind the
API); the settled figures count that tail too.

Prints one JSON line per replay: which plane, replayed pods/s and the seconds to settle, each process's
CPU seconds over the replay and until settled (the real plane's `plane` CPU is the sum of its four
processes; `node` is the agent's, the part localkube does in its own process), CPU ms per pod, the
replaying client's own CPU, refused writes, the load average, and `bound`: the process that used 0.8 of a
core or more during the replay (the busiest one's share is given; "none saturated" when the machine's other
load held them all back). Then one line with each side's means and the ratios localkube / real plane. Measures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks import localkube_ab, replay, scale
from benchmarks.procstat import read_stat
from kuberay.api import crd
from support import toolbuild
from support.agent_process import AgentProcess
from support.localkube_process import LocalKubeProcess
from support.realkube_process import NODE_NAME, RealKubeProcess

SETTLE_TIMEOUT_S = 600.0
POLL_S = 1.0
SATURATED = 0.8  # of one core: a process busier than this over the replay is what bounds it


@contextmanager
def localkube(workdir: Path) -> Iterator[tuple[LocalKubeProcess, dict[str, int]]]:
    """A fresh localkube (simulate mode) with the ray.io CRDs; its one process."""
    server = LocalKubeProcess(workdir / "localkube")
    try:
        server.start()
        server.apply(crd.crds())
        assert server.process is not None
        yield server, {"localkube": server.process.pid}
    finally:
        server.stop()


@contextmanager
def real_plane(workdir: Path) -> Iterator[tuple[LocalKubeProcess, dict[str, int]]]:
    """A fresh real control plane with `localkube agent` as its node, the ray.io CRDs installed and the
    node Ready; its processes by name."""
    bin_dir, _ = toolbuild.ensure("realkube")
    server = RealKubeProcess(workdir / "realkube", bin_dir)
    node = AgentProcess(server.node_kubeconfig, workdir / "agent.log", node_name=NODE_NAME)
    try:
        server.start()
        node.start()
        server.apply(crd.crds())
        server.wait_node_ready(NODE_NAME)
        assert node.process is not None
        yield server, {**{name: p.pid for name, p in server.processes.items()}, "node": node.process.pid}
    finally:
        node.stop()
        server.stop()


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: read_stat(pid).cpu_seconds for name, pid in pids.items()}


async def _service_account(client: httpx.AsyncClient, namespace: str) -> None:
    """Waits for the namespace's `default` ServiceAccount: kube-apiserver refuses pods until the
    controller-manager has made it (localkube makes it at once)."""
    deadline = time.monotonic() + 60
    while (await client.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")).status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no default ServiceAccount in {namespace}")
        await asyncio.sleep(0.2)


async def _settle(client: httpx.AsyncClient, namespace: str) -> None:
    """Returns once no pod of `namespace` is other than Running (the replay has made them all)."""
    params = {"fieldSelector": "status.phase!=Running", "limit": "1"}
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while (await client.get(f"/api/v1/namespaces/{namespace}/pods", params=params)).json()["items"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods of {namespace} still not Running after {SETTLE_TIMEOUT_S:.0f} s")
        await asyncio.sleep(POLL_S)


async def replay_once(
    args: argparse.Namespace, workdir: Path, writes: list[replay.Write], plane: str
) -> dict[str, Any]:
    """One fresh plane ("localkube" or "real"), the timed replay, then the wait until every pod runs."""
    starting = localkube if plane == "localkube" else real_plane
    with starting(workdir) as (server, pids):
        cluster = scale.Cluster(workdir, args.concurrency, args.qps, args.burst)
        cluster.localkube = server
        async with cluster.client() as client:
            await scale._create_namespace(client, scale.BENCH_NAMESPACE)
            await _service_account(client, scale.BENCH_NAMESPACE)
            await asyncio.sleep(localkube_ab.SETTLE_S)
            load_before = localkube_ab._load()
            own_before, before = time.process_time(), _cpu(pids)
            by_pid = {pid: name for name, pid in pids.items()}
            replaying, elapsed, used = await scale.replay_on(
                cluster.endpoint(), replay.fresh(writes), args.concurrency, list(pids.values())
            )
            own = time.process_time() - own_before
            started = time.perf_counter()
            await _settle(client, scale.BENCH_NAMESPACE)
            settle_s = time.perf_counter() - started
            settled = {name: cpu - before[name] for name, cpu in _cpu(pids).items()}
    pods = args.clusters * (args.workers + 1)
    replay_cpu = {by_pid[pid]: round(cpu, 1) for pid, cpu in used.items()}
    plane_cpu = sum(cpu for name, cpu in replay_cpu.items() if name != "node")
    total = sum(used.values())
    total_settled = sum(settled.values())
    return {
        "plane": plane,
        "clusters": args.clusters,
        "pods_per_s": round(pods / elapsed, 1),
        "replay_s": round(elapsed, 1),
        "settle_s": round(settle_s, 1),
        "replay_cpu_s": replay_cpu,
        **({"plane_cpu_s": round(plane_cpu, 1)} if plane == "real" else {}),
        "cpu_ms_per_pod": round(total * 1000 / pods, 2),
        "settled_cpu_s": {name: round(cpu, 1) for name, cpu in settled.items()},
        "settled_cpu_ms_per_pod": round(total_settled * 1000 / pods, 2),
        "replayer_cpu_s": round(own, 1),
        "bound": _bound(replay_cpu, own, elapsed),
        "replayed_writes": len(writes),
        "failed": replaying.failed,
        "loadavg_before": load_before,
        "loadavg_after": localkube_ab._load(),
    }


def _bound(cpu: dict[str, float], replayer: float, elapsed: float) -> dict[str, Any]:
    """The process that used the most of one core over the replay, the replaying client included; when
    none used `SATURATED` of a core, the machine's other load held them all back."""
    process, used = max([*cpu.items(), ("replayer", replayer)], key=lambda item: item[1])
    share = round(used / elapsed, 2)
    return {"process": process if share >= SATURATED else "none saturated", "busiest_core_share": share}


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each plane's mean of the rate and CPU figures, and the ratio localkube / real."""
    out: dict[str, Any] = {}
    for key in ("pods_per_s", "cpu_ms_per_pod", "settled_cpu_ms_per_pod"):
        means = {
            plane: statistics.mean(r[key] for r in results if r["plane"] == plane)
            for plane in ("localkube", "real")
        }
        out[key] = {
            **{p: round(m, 2) for p, m in means.items()},
            "ratio": round(means["localkube"] / means["real"], 3),
        }
    return out


async def run(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    writes = await scale.record(args, workdir / "record", scale.OURS)
    results = []
    for round_ in range(args.rounds):
        for plane in ("localkube", "real"):
            result = await replay_once(args, workdir / f"replay-{round_}-{plane}", writes, plane)
            results.append(result)
            print(json.dumps(result), flush=True)
    print(json.dumps({"localkube_over_real": summary(results)}), flush=True)
    return results


def main() -> None:
    parser = scale.arguments(__doc__)
    parser.set_defaults(clusters=1000)
    parser.add_argument("--rounds", type=int, default=2, help="replays on each plane, alternating")
    args = parser.parse_args()
    if args.skip_limit or args.source is not None:
        parser.error("--skip-limit and --source are benchmarks.scale's, not this harness's")
    scale.in_workdir("kuberay-controlplane-", args.keep, lambda workdir: run(args, workdir))


if __name__ == "__main__":
    main()
