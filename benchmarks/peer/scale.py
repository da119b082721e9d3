"""`benchmarks.scale` against upstream's operator and ours in turn: same flags, identical fresh localkubes.

    python -m benchmarks.peer.scale --clusters N [--operators upstream,ours] [benchmarks.scale's flags]

Each operator gets its own run of `benchmarks.scale` (a fresh localkube, the limit measured on it, then N
RayClusters; see that module): the same `--qps/--burst`, `--reconcile-concurrency` and the other flags,
only the command differs (upstream's binary, built by `benchmarks.peer.upstream`, or
`python -m kuberay.operator`). Prints one JSON line per operator, `benchmarks.scale`'s fields plus the
machine's load average before and after (the machine may be shared), then one line of ratios
ours / upstream. Measures only: nothing is asserted.
"""

from __future__ import annotations

import json
import os
from typing import Any

from benchmarks import scale
from benchmarks.peer import upstream

RATIOS = (
    "operator_pods_per_s",
    "ready_p50_s",
    "ready_p99_s",
    "cpu_ms_per_pod",
    "rss_per_pod_kb",
    "operator_idle_rss_mb",
)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float | None]:
    return {key: round(ours[key] / theirs[key], 3) if theirs[key] else None for key in RATIOS}


def main() -> None:
    parser = scale.arguments(__doc__)
    parser.add_argument(
        "--operators", default="upstream,ours", help="which operators, in this order (comma-separated)"
    )
    args = parser.parse_args()
    commands = {"upstream": lambda: [str(upstream.install())], "ours": lambda: list(scale.OURS)}
    results: dict[str, dict[str, Any]] = {}
    for kind in args.operators.split(","):
        command = commands[kind]()  # builds upstream's binary first if need be, outside the measurement
        before = _load()
        result = {"operator": kind, **scale.measure(args, command), "loadavg_before": before}
        result["loadavg_after"] = _load()
        results[kind] = result
        print(json.dumps(result), flush=True)
    if {"upstream", "ours"} <= results.keys():
        print(json.dumps({"ours_over_upstream": ratios(results["ours"], results["upstream"])}), flush=True)


if __name__ == "__main__":
    main()
