"""localkube beside a baseline checkout's localkube, on the same recorded request mix, side by side.

    python -m benchmarks.localkube_ab --baseline DIR [--clusters 1000] [--rounds 2] [--prefill-clusters M]
                                      [benchmarks.scale's flags]

Records the operator's writes once (`benchmarks.scale`'s operator phase with the audit log, this
checkout's localkube and operator), then replays them (`benchmarks/replay.py`, `--concurrency` in flight)
on fresh localkubes, this checkout's and the baseline's in turn (A B A B ...), so that both meet the same
moments of a shared machine: only ratios within one run mean much there. DIR is another checkout, such
as a git worktree of the baseline commit; its `src` goes first on the baseline localkube's PYTHONPATH (the
same virtualenv serves both).

With `--prefill-clusters M`, each fresh localkube first takes M clusters' worth of the same writes, in
namespaces of their own and untimed, so the timed replay meets a store that already holds M more
clusters' objects: localkube's rate as its store grows, without recording M clusters.

Prints one JSON line per replay (which localkube, pods/s, localkube's CPU seconds and CPU ms per pod in
the replay, failed writes, the load average before and after) and one line with each side's mean and
the ratio this / baseline. Measures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import replay, scale

SETTLE_S = 3.0  # as benchmarks.scale waits before its replay: localkube's start-up work is not counted


def _load() -> float:
    return round(os.getloadavg()[0], 2)


async def _replay_once(
    args: argparse.Namespace, workdir: Path, writes: list[replay.Write], source: Path | None
) -> dict[str, Any]:
    """One fresh localkube (of `source`'s checkout, else this one), prefilled, then the timed replay."""
    cluster = scale.Cluster(workdir, args.concurrency, args.qps, args.burst)
    with scale.checkout(source):
        cluster.start_localkube()
    try:
        async with cluster.client() as client:
            for copy in range(args.prefill_clusters // args.clusters):
                namespace = f"prefill-{copy}"
                await scale._create_namespace(client, namespace)
                await replay.Replay(client, replay.fresh(writes, namespace)).run(args.concurrency)
            await scale._create_namespace(client, scale.BENCH_NAMESPACE)
            await asyncio.sleep(SETTLE_S)
            load_before = _load()
            replaying, elapsed, cpu = await scale.timed_replay(
                cluster, client, replay.fresh(writes), args.concurrency
            )
    finally:
        cluster.stop()
    pods = args.clusters * (args.workers + 1)
    return {
        "localkube": "baseline" if source is not None else "this",
        "clusters": args.clusters,
        "prefill_clusters": args.prefill_clusters,
        "pods_per_s": round(pods / elapsed, 1),
        "replay_s": round(elapsed, 1),
        "localkube_cpu_s": round(cpu, 1),
        "cpu_ms_per_pod": round(cpu * 1000 / pods, 2),
        "replayed_writes": len(writes),
        "failed": replaying.failed,
        "loadavg_before": load_before,
        "loadavg_after": _load(),
    }


async def run(args: argparse.Namespace, workdir: Path) -> None:
    writes = await scale.record(args, workdir / "record", scale.OURS)
    results: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
    for round_ in range(args.rounds):
        for side, source in (("this", None), ("baseline", args.baseline)):
            result = await _replay_once(args, workdir / f"replay-{round_}-{side}", writes, source)
            results[result["localkube"]].append(result)
            print(json.dumps(result), flush=True)
    summary: dict[str, Any] = {}
    for key in ("pods_per_s", "cpu_ms_per_pod"):
        this = statistics.mean(r[key] for r in results["this"])
        baseline = statistics.mean(r[key] for r in results["baseline"])
        summary[key] = {
            "this": round(this, 2),
            "baseline": round(baseline, 2),
            "ratio": round(this / baseline, 3),
        }
    print(json.dumps({"this_over_baseline": summary}), flush=True)


def main() -> None:
    parser = scale.arguments(__doc__)
    parser.set_defaults(clusters=1000)
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the baseline commit")
    parser.add_argument("--rounds", type=int, default=2, help="replays of each localkube, alternating")
    parser.add_argument(
        "--prefill-clusters", type=int, default=0, help="clusters' worth of objects stored before the replay"
    )
    args = parser.parse_args()
    if args.skip_limit or args.source is not None:
        parser.error("--skip-limit and --source are benchmarks.scale's; use --baseline here")
    workdir = Path(tempfile.mkdtemp(prefix="kuberay-localkube-ab-"))
    try:
        asyncio.run(run(args, workdir))
    finally:
        if args.keep:
            print(f"logs in {workdir}", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
