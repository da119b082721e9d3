"""Every RayCluster and RayJob sample of upstream's repository under upstream's operator on localkube
(simulate mode).

    python -m benchmarks.peer.conformance [--operator upstream|ours] [--timeout 300] [--keep DIR] [SAMPLE...]

Starts a fresh localkube and the operator (see `benchmarks.peer.environment`), creates every RayCluster
sample (or those named) the way the integration test `tests/integration/raycluster/test_samples.py` does
(each in its own namespace with its supporting objects; node-selecting samples one at a time on a node
relabelled for them), and waits until each reports `status.state: ready`. Prints one line per sample:
`ready` with its pod count and seconds, `rejected` when the operator refused the spec (an
`InvalidRayClusterSpec` Event: upstream v1.5.0 does not accept that sample), or `NOT READY` with the
cluster's state, its pods' phases and the last Warning Event; then a summary line. A RayJob sample is
waited for until its end state (`ended`, or `failed` with its reason), with a Ray Jobs API stand-in on
its head (see `benchmarks.peer.rayjobs`). Exit status 1 when a sample the operator accepted did not
become ready or end: that is something localkube or the operator lacks.
This is a harness, never part of the suite's pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.peer.environment import Environment
from benchmarks.peer.rayjobs import (
    JobsStandIn,
    create_rayjob_sample,
    rayjob_outcome,
    rayjob_samples,
    the_rayjob,
)
from integration.raycluster.conftest import Kube
from integration.raycluster.test_samples import (
    create_sample,
    expected_pods,
    node_selectors,
    sample_files,
    the_cluster,
)
from integration.runtime.kube import client_for
from kuberay.rayresources import RAYJOB
from kuberay.runtime.client import Client
from kuberay.runtime.resources import NODE

# The integration test's sample handling is shared, not copied: benchmarks.peer puts tests/ on sys.path.
REJECTED = "InvalidRayClusterSpec"
# Four times the integration test's NODE_POOL: the RayJob samples bring a second 256-chip TPU sample.
POOL = {"cpu": "16k", "memory": "64Ti"}


def every_sample() -> list[str]:
    return sample_files() + rayjob_samples()


def is_rayjob(sample: str) -> bool:
    return sample.startswith("ray-job")


def cluster_of(sample: str) -> dict[str, Any]:
    """The sample's RayCluster, or for a RayJob the cluster it asks for (no name: the operator makes one)."""
    if not is_rayjob(sample):
        return the_cluster(sample)
    spec = the_rayjob(sample)["spec"].get("rayClusterSpec") or {"headGroupSpec": {"template": {}}}
    return {"metadata": {}, "spec": spec}


async def create(client: Client, samples: list[str], standins: list[JobsStandIn]) -> dict[str, Kube | str]:
    """Each sample's namespace (or why it could not be created); node-selecting samples one at a time."""
    created: dict[str, Kube | str] = {}
    (node,) = (await client.list(NODE)).items
    capacity = {**node["status"]["allocatable"], **POOL}
    await client.patch(
        NODE,
        node["metadata"]["name"],
        {"status": {"capacity": capacity, "allocatable": capacity}},
        subresource="status",
    )
    for sample in sorted(samples, key=lambda s: not node_selectors(cluster_of(s))):
        selectors = node_selectors(cluster_of(sample))
        if selectors:
            await client.patch(NODE, node["metadata"]["name"], {"metadata": {"labels": selectors}})
        try:
            if is_rayjob(sample):
                kube = await create_rayjob_sample(client, sample, standins)
            else:
                kube = await create_sample(client, sample)
        except Exception as e:  # a harness reports every failure and goes on
            created[sample] = f"create failed: {e}"
            continue
        created[sample] = kube
        if selectors:
            await _bound(kube, sample)
    return created


async def cluster_name(kube: Kube, sample: str) -> str | None:
    """The sample's RayCluster name; for a RayJob, the one its status names (None until it does)."""
    if not is_rayjob(sample):
        return str(the_cluster(sample)["metadata"]["name"])
    job = await kube.client.get(RAYJOB, the_rayjob(sample)["metadata"]["name"], kube.namespace)
    return (job.get("status") or {}).get("rayClusterName")


async def _bound(kube: Kube, sample: str, timeout: float = 60.0) -> None:
    """Waits (bounded) until the sample's pods are bound, so relabelling the node cannot strand them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        name = await cluster_name(kube, sample)
        pods = await kube.pods(name) if name else []
        if len(pods) >= expected_pods(cluster_of(sample)) and all(p["spec"].get("nodeName") for p in pods):
            return
        await asyncio.sleep(0.5)


async def outcome(kube: Kube, cluster: dict[str, Any]) -> tuple[str, str]:
    """(`ready` | `rejected` | `pending`, detail) for one sample, read now."""
    name = cluster["metadata"]["name"]
    status = (await kube.cluster(name)).get("status") or {}
    pods = await kube.pods(name)
    if status.get("state") == "ready":
        return "ready", f"{len(pods)}/{expected_pods(cluster)} pods"
    warnings = [e for e in await kube.events(name) if e.get("type") == "Warning"]
    if any(e["reason"] == REJECTED for e in warnings):
        return "rejected", next(e["message"] for e in warnings if e["reason"] == REJECTED)
    phases = sorted(p.get("status", {}).get("phase", "?") for p in pods)
    last = f"; last warning {warnings[-1]['reason']}: {warnings[-1]['message']}" if warnings else ""
    return "pending", f"state={status.get('state')!r} reason={status.get('reason')!r} pods={phases}{last}"


Results = dict[str, tuple[str, str, float]]


Settled = Callable[[str, Kube], Awaitable[None]]


async def settle(
    client: Client,
    samples: list[str],
    timeout: float,
    standins: list[JobsStandIn],
    settled: Settled | None = None,
) -> tuple[Results, dict[str, Kube]]:
    """Creates the samples and waits (at most `timeout` s) until each is ready, rejected or ended: each
    sample's (state, detail, seconds since the start), and the namespace of each one created. The Jobs API
    stand-ins of RayJob samples are added to `standins`, for the caller to stop. `settled(sample, kube)`
    is awaited as each sample settles (or is given up on), before a TTL can delete what it made."""
    started = time.monotonic()
    created = await create(client, samples, standins)
    results: Results = {s: ("NOT CREATED", k, 0.0) for s, k in created.items() if isinstance(k, str)}
    kubes = {s: k for s, k in created.items() if isinstance(k, Kube)}
    waiting = dict(kubes)
    deadline = started + timeout
    while waiting:
        for sample, kube in list(waiting.items()):
            if is_rayjob(sample):
                state, detail = await rayjob_outcome(kube, sample)
            else:
                state, detail = await outcome(kube, the_cluster(sample))
            if state == "pending" and time.monotonic() <= deadline:
                continue
            results[sample] = (
                state if state != "pending" else "NOT READY",
                detail,
                time.monotonic() - started,
            )
            del waiting[sample]
            if settled is not None:
                await settled(sample, kube)
        await asyncio.sleep(1.0)
    return results, kubes


async def run(env: Environment, samples: list[str], timeout: float) -> int:
    client = client_for(env.localkube)
    standins: list[JobsStandIn] = []
    try:
        results, _ = await settle(client, samples, timeout, standins)
    finally:
        await client.close()
        for standin in standins:
            standin.stop()
    for sample in sorted(results):
        state, detail, seconds = results[sample]
        print(f"{sample:55} {state:11} {seconds:6.1f}s  {detail}")
    counts = {
        state: sum(r[0] == state for r in results.values()) for state in {r[0] for r in results.values()}
    }
    print(f"{env.kind}: {len(results)} samples: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0 if set(counts) <= {"ready", "rejected", "ended"} else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--operator", choices=("upstream", "ours"), default="upstream")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds for all samples to become ready"
    )
    parser.add_argument(
        "--keep", type=Path, help="work directory to keep (logs, localkube data); default a temporary one"
    )
    parser.add_argument(
        "samples", nargs="*", help="sample file names (default: every RayCluster and RayJob sample)"
    )
    args = parser.parse_args()
    samples = args.samples or every_sample()
    with tempfile.TemporaryDirectory(prefix="peer-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        with Environment(workdir, args.operator) as env:
            status = asyncio.run(run(env, samples, args.timeout))
        if status and not args.keep:
            print(f"operator log:\n{(workdir / 'operator.log').read_text()[-4000:]}", file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
