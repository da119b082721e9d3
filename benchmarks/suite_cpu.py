"""Where the test suite's CPU goes: runs a command (by default the README's test command) and samples every
process on the machine, then prints the CPU time of each family of processes (Ray, localkube, the real
control plane, the operator, pytest's workers, ...) and how busy the machine was, minute by minute.

    python -m benchmarks.suite_cpu                        # bash scripts/test -q -p no:cacheprovider
    python -m benchmarks.suite_cpu -- pytest -n 3 tests/e2e

The suite is bound by the CPU on this machine size (2 cores): its wall time is about the busy core-seconds
over two, so this says what to make cheaper. A process is sampled every `--interval` seconds from
/proc/<pid>/stat (user + system time, minus what it had used when the run began): one that lives shorter
than the interval is missed, which the line comparing the sampled total with the machine's busy time (from
/proc/stat) shows. The families are told apart by their command lines; a process is counted once, under the
first family that matches.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.procstat import TICKS_PER_SECOND, read_stat

# (family, substrings of the command line, any of which puts a process in it), first match wins.
FAMILIES: list[tuple[str, tuple[str, ...]]] = [
    ("pytest workers (tests, in-process operators)", ("exec(eval(sys.stdin.readline()))", "bin/pytest")),
    (
        "Ray (real clusters: gcs, raylet, dashboard, agents, workers)",
        ("site-packages/ray/", "bin/ray ", "ray::", "ray-dashboard", "ray start"),
    ),
    ("real control plane", ("kube-apiserver", "bin/etcd", "kube-controller-manager", "kube-scheduler")),
    ("localkube (servers and node agents)", ("-m localkube", "bin/localkube")),
    ("operator processes", ("-m kuberay.operator",)),
    ("kuberay CLI (local up, kubectl-ray, apiserver)", ("bin/kuberay", "-m kuberay", "kubectl-ray")),
    ("kubectl", ("kubectl",)),
    ("helm", ("helm",)),
    ("lint and types (ruff, mypy, import-linter)", ("ruff", "mypy", "lint-imports")),
    ("setup (pip, venv)", ("pip install", "-m venv", "bin/pip")),
]
OTHER = "other"


@dataclass
class Process:
    command: str
    baseline: float  # CPU seconds it had used when first seen, if it ran before the run began
    used: float = 0.0


@dataclass
class Sampler:
    started: set[int]  # pids alive before the run (their CPU before it is not the run's)
    processes: dict[tuple[int, int], Process] = field(default_factory=dict)
    busy: list[tuple[float, float]] = field(default_factory=list)  # (time, core-seconds busy since the last)
    _last_stat: tuple[int, int] | None = None

    def sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = read_stat(entry.name)
                cpu = stat.cpu_seconds
                key = (int(entry.name), stat.start_ticks)  # pid and start time: pids are reused
                known = self.processes.get(key)
                if known is None:
                    raw = Path(entry.path, "cmdline").read_bytes()
                    command = raw.replace(b"\0", b" ").decode(errors="replace").strip()
                    baseline = cpu if key[0] in self.started else 0.0
                    known = self.processes[key] = Process(command or stat.name, baseline)
                known.used = cpu - known.baseline
            except (OSError, ValueError, IndexError):
                continue  # gone between the listing and the read
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        total, idle = sum(values), values[3] + values[4]
        if self._last_stat is not None:
            busy_ticks = (total - self._last_stat[0]) - (idle - self._last_stat[1])
            self.busy.append((time.monotonic(), busy_ticks / TICKS_PER_SECOND))
        self._last_stat = (total, idle)


def family_of(command: str) -> str:
    for name, needles in FAMILIES:
        if any(needle in command for needle in needles):
            return name
    return OTHER


def report(sampler: Sampler, wall: float, interval: float) -> str:
    """The table: CPU by family, largest first, and the machine's busy cores minute by minute."""
    by_family: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for process in sampler.processes.values():
        if process.used <= 0:
            continue
        family = family_of(process.command)
        by_family[family] += process.used
        counts[family] += 1
    sampled = sum(by_family.values())
    busy = sum(seconds for _, seconds in sampler.busy)
    cores = os.cpu_count() or 1
    lines = [f"wall {wall:.0f} s on {cores} cores: busy {busy:.0f} core-s, idle {cores * wall - busy:.0f}"]
    lines.append(
        f"sampled: {sampled:.0f} core-s, {sampled / max(busy, 1e-9):.0%} of busy (the rest: shorter than {interval} s)"
    )
    for family, seconds in sorted(by_family.items(), key=lambda item: -item[1]):
        lines.append(
            f"  {seconds:8.1f} core-s {seconds / sampled:5.1%} {counts[family]:6d} processes  {family}"
        )
    if sampler.busy:
        start = sampler.busy[0][0]
        minutes: dict[int, list[float]] = defaultdict(list)
        for at, seconds in sampler.busy:
            minutes[int((at - start) // 60)].append(seconds)
        lines.append("busy cores, minute by minute:")
        spans = {minute: min(60.0, wall - 60 * minute) for minute in minutes}
        lines.append("  " + " ".join(f"{sum(v) / spans[m]:.1f}" for m, v in sorted(minutes.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("command", nargs="*", help="the command to run (default: the README's test command)")
    args = parser.parse_args(argv)
    command = args.command or ["bash", "scripts/test", "-q", "-p", "no:cacheprovider"]
    sampler = Sampler(started={int(p) for p in os.listdir("/proc") if p.isdigit()})
    began = time.monotonic()
    process = subprocess.Popen(command)
    while process.poll() is None:
        sampler.sample()
        time.sleep(args.interval)
    wall = time.monotonic() - began
    print(report(sampler, wall, args.interval))
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
