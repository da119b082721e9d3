"""localkube beside a baseline checkout's localkube, on the same recorded request mix, side by side.

    python -m benchmarks.localkube_ab [--baseline DIR] [--clusters 1000] [--rounds 2] [--prefill-clusters M ...]
                                      [benchmarks.scale's flags]

Records the operator's writes once (`benchmarks.scale`'s operator phase with the audit log, this
checkout's localkube and operator), then replays them (`benchmarks/replay.py`, `--concurrency` in flight)
on fresh localkubes, this checkout's and the baseline's in turn (A B A B ...), so that both meet the same
moments of a shared machine: only ratios within one run mean much there. DIR is another checkout, such
as a git worktree of the baseline commit; its `src` goes first on the baseline localkube's PYTHONPATH (the
same virtualenv serves both). Without `--baseline`, only this checkout's localkube is replayed.

With `--prefill-clusters M`, each fresh localkube first takes M clusters' worth of the same writes, in
namespaces of their own and untimed, so the timed replay meets a store that already holds M more
clusters' objects: localkube's rate as its store grows, without recording M clusters. With several
values (`--prefill-clusters 0 9000`), each round replays each localkube at each, and the summary gives
each localkube's rate and CPU per pod at the largest over those at the smallest (flat in stored objects:
a rate ratio near 1).

Prints one JSON line per replay (which localkube, pods/s, localkube's CPU seconds and CPU ms per pod in
the replay, the CPU seconds of this process, which sends the writes (a side near `replay_s` bounds the
rate), failed writes, the load average before and after) and one line with each side's means and
the ratios this / baseline and largest / smallest prefill. Measures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import replay, scale

SETTLE_S = 3.0  # as benchmarks.scale waits before its replay: localkube's start-up work is not counted


def _load() -> float:
    return round(os.getloadavg()[0], 2)


async def _replay_once(
    args: argparse.Namespace, workdir: Path, writes: list[replay.Write], source: Path | None, prefill: int
) -> dict[str, Any]:
    """One fresh localkube (of `source`'s checkout, else this one), prefilled, then the timed replay."""
    cluster = scale.Cluster(workdir, args.concurrency, args.qps, args.burst)
    with scale.checkout(source):
        cluster.start_localkube()
    try:
        async with cluster.client() as client:
            for copy in range(prefill // args.clusters):
                namespace = f"prefill-{copy}"
                await scale._create_namespace(client, namespace)
                await replay.Replay(cluster.endpoint(), replay.fresh(writes, namespace)).run(args.concurrency)
            await scale._create_namespace(client, scale.BENCH_NAMESPACE)
            await asyncio.sleep(SETTLE_S)
            load_before = _load()
            client_before = time.process_time()
            replaying, elapsed, cpu = await scale.timed_replay(
                cluster, replay.fresh(writes), args.concurrency
            )
            client_cpu = time.process_time() - client_before
    finally:
        cluster.stop()
    pods = args.clusters * (args.workers + 1)
    return {
        "localkube": "baseline" if source is not None else "this",
        "clusters": args.clusters,
        "prefill_clusters": prefill,
        "pods_per_s": round(pods / elapsed, 1),
        "replay_s": round(elapsed, 1),
        "localkube_cpu_s": round(cpu, 1),
        "client_cpu_s": round(client_cpu, 1),
        "cpu_ms_per_pod": round(cpu * 1000 / pods, 2),
        "replayed_writes": len(writes),
        "failed": replaying.failed,
        "loadavg_before": load_before,
        "loadavg_after": _load(),
    }


async def run(args: argparse.Namespace, workdir: Path) -> None:
    writes = await scale.record(args, workdir / "record", scale.OURS)
    sides = [("this", None)] + ([("baseline", args.baseline)] if args.baseline is not None else [])
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        for prefill in args.prefill_clusters:
            for side, source in sides:
                replaying = workdir / f"replay-{round_}-{prefill}-{side}"
                result = await _replay_once(args, replaying, writes, source, prefill)
                results.setdefault((side, prefill), []).append(result)
                print(json.dumps(result), flush=True)
    means = {
        (side, prefill): {
            key: statistics.mean(r[key] for r in runs) for key in ("pods_per_s", "cpu_ms_per_pod")
        }
        for (side, prefill), runs in results.items()
    }
    smallest, largest = min(args.prefill_clusters), max(args.prefill_clusters)
    summary: dict[str, Any] = {}
    for key in ("pods_per_s", "cpu_ms_per_pod"):
        entry: dict[str, Any] = {
            f"{side} prefill {prefill}": round(mean[key], 2) for (side, prefill), mean in means.items()
        }
        for prefill in args.prefill_clusters:
            if args.baseline is not None:
                entry[f"this / baseline, prefill {prefill}"] = round(
                    means["this", prefill][key] / means["baseline", prefill][key], 3
                )
        if largest != smallest:
            for side, _ in sides:
                entry[f"{side}: prefill {largest} / {smallest}"] = round(
                    means[side, largest][key] / means[side, smallest][key], 3
                )
        summary[key] = entry
    print(json.dumps({"summary": summary}), flush=True)


def main() -> None:
    parser = scale.arguments(__doc__)
    parser.set_defaults(clusters=1000)
    parser.add_argument("--baseline", type=Path, help="a checkout of the baseline commit")
    parser.add_argument("--rounds", type=int, default=2, help="replays of each localkube, alternating")
    parser.add_argument(
        "--prefill-clusters",
        type=int,
        nargs="+",
        default=[0],
        help="clusters' worth of objects stored before the replay (several: each in turn)",
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
