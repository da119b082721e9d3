"""A soak: steady churn of RayClusters and RayJobs with random operator and localkube crashes.

    python -m benchmarks.soak --minutes M [--seed S] [--clusters 6] [--jobs 4]
        [--localkube-fault-every 480] [--operator-fault-every 480]

localkube (simulate mode) and `kuberay-operator` run as child processes (`benchmarks.scale.Cluster`). In
rounds until M minutes have passed: a few random operations (create, scale or delete a RayCluster; create,
suspend, resume or delete a RayJob), now and then a fault (kill -9 of the operator or of localkube, then
a restart of it; each on its own random schedule, so that a memory soak can kill the operator rarely and
still let one of its generations live long), then the invariant check: the objects must settle within `SETTLE_S`, else each thing
still wrong counts as a violation. Between operations it sleeps, to keep its CPU use modest on a shared
machine.

Invariants: for RayClusters, `tests/reliability/invariants.py` (the drills' checker: one head and the
asked-for workers each, no orphans, status agreeing with the pods). For RayJobs, ours below: each RayJob
owns at most one RayCluster and one submitter Job, nothing in the jobs namespace outlives its RayJob, and
a suspended RayJob that has not finished is Suspended with no cluster.

Prints, at the end, one JSON line: minutes, rounds, operations by kind, faults by kind, violations (goal
0) with the first few, and the operator's RSS over time (MB, sampled each round, with the operator's
generation: a kill -9 starts a new one; and its anonymous part, what the heap is), plus, for each
generation that lived past its first `WARM_S`, the growth and least-squares slope of both from then on. It stops by itself
and leaves nothing running (every child is stopped in a `finally`, its working directory removed).
Nothing is asserted: this measures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from benchmarks.scale import Cluster
from kuberay.api import crd
from support.localkube_process import LocalKubeProcess

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reliability"))
import invariants  # noqa: E402

CLUSTERS_NS, JOBS_NS = "soak-clusters", "soak-jobs"
START_S = 180.0  # a bound on a (re)start on a loaded machine
SETTLE_S = 180.0  # a bound on settling after a round, not a measurement
WARM_S = 600.0  # an operator generation is warm this long after its start (issue 39's "first ten minutes")
OPS_PER_ROUND = 4
PAUSE_S = 2.0  # between operations
JOBS_PATH = f"/apis/ray.io/v1/namespaces/{JOBS_NS}/rayjobs"
FINISHED = ("Complete", "Failed")


def rayjob(name: str) -> dict[str, Any]:
    """A K8sJobMode RayJob on a one-head cluster of a tenth of a CPU (the job never reaches Ray in simulate
    mode: it ends Failed once its submitter has finished, which is churn too)."""
    cluster = invariants.cluster("unused", 0)["spec"]
    cluster["workerGroupSpecs"] = []
    cluster["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        # Suspending needs shutdownAfterJobFinishes (upstream's validation); a finished job's cluster goes.
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": cluster,
        },
    }


def job_violations(client: httpx.Client, suspended: set[str]) -> list[str]:
    """What breaks the RayJob invariants now (see the module docstring); empty when they hold."""
    jobs = {j["metadata"]["name"]: j for j in invariants.items(client, JOBS_PATH)}
    uids = {j["metadata"]["uid"]: name for name, j in jobs.items()}
    found: list[str] = []
    owned: Counter[tuple[str, str]] = Counter()
    for kind, path in (
        ("RayCluster", invariants.clusters_path(JOBS_NS)),
        ("Job", f"/apis/batch/v1/namespaces/{JOBS_NS}/jobs"),
    ):
        for obj in invariants.items(client, path):
            if obj["metadata"].get("deletionTimestamp"):
                continue
            owners = [
                uids[o["uid"]] for o in obj["metadata"].get("ownerReferences") or [] if o["uid"] in uids
            ]
            if not owners:
                found.append(f"{kind} {obj['metadata']['name']} has no live RayJob")
            for owner in owners:
                owned[(owner, kind)] += 1
    found += [f"RayJob {name} owns {n} {kind}s" for (name, kind), n in owned.items() if n > 1]
    for name in suspended & set(jobs):
        state = (jobs[name].get("status") or {}).get("jobDeploymentStatus")
        if state in FINISHED:
            continue
        if state != "Suspended" or owned[(name, "RayCluster")]:
            found.append(
                f"RayJob {name} is suspended but {state!r} with {owned[(name, 'RayCluster')]} cluster(s)"
            )
    return found


def start_operator(cluster: Cluster, attempts: int = 3) -> None:
    """`cluster.start_operator()`, again if it was not ready in time (a loaded machine), never leaving the
    slow one running."""
    for attempt in range(attempts):
        try:
            cluster.start_operator()
            return
        except RuntimeError:
            if cluster.operator is not None and cluster.operator.poll() is None:
                os.killpg(cluster.operator.pid, signal.SIGKILL)
                cluster.operator.wait()
            if attempt == attempts - 1:
                raise


class Soak:
    def __init__(self, cluster: Cluster, rng: random.Random, pool_clusters: int, pool_jobs: int) -> None:
        self.cluster = cluster
        self.rng = rng
        self.pool_clusters, self.pool_jobs = pool_clusters, pool_jobs
        self.want: dict[str, int] = {}  # RayCluster name -> workers
        self.jobs: set[str] = set()
        self.suspended: set[str] = set()
        self.serial = 0
        self.operations: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.violations: list[str] = []
        self.generation = 0
        self.generation_started = time.monotonic()
        # (minute, RSS MB, anonymous RSS MB, operator generation)
        self.rss: list[tuple[float, float, float, int]] = []

    def client(self) -> httpx.Client:
        assert self.cluster.localkube is not None
        return self.cluster.localkube.client(timeout=30, transport=invariants.Retrying(
            verify=self.cluster.localkube.ssl_context(), retries=3))  # fmt: skip

    def _name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial}"

    def operate(self, api: httpx.Client) -> None:
        """One random operation, chosen among those that make sense now."""
        choices = ["scale", "scale"] if self.want else []
        choices += ["create-cluster"] if len(self.want) < self.pool_clusters else ["delete-cluster"]
        choices += ["create-job"] if len(self.jobs) < self.pool_jobs else ["delete-job"]
        choices += ["suspend-job", "resume-job"] if self.jobs else []
        op = self.rng.choice(choices)
        if op == "create-cluster":
            name = self._name("c")
            body = invariants.cluster(name, self.rng.randint(0, 3))
            api.post(invariants.clusters_path(CLUSTERS_NS), json=body).raise_for_status()
            self.want[name] = body["spec"]["workerGroupSpecs"][0]["replicas"]
        elif op == "scale":
            name = self.rng.choice(sorted(self.want))
            workers = self.rng.randint(0, 4)
            invariants.scale(api, CLUSTERS_NS, name, workers)
            self.want[name] = workers
        elif op == "delete-cluster":
            name = self.rng.choice(sorted(self.want))
            api.delete(f"{invariants.clusters_path(CLUSTERS_NS)}/{name}").raise_for_status()
            del self.want[name]
        elif op == "create-job":
            name = self._name("j")
            api.post(JOBS_PATH, json=rayjob(name)).raise_for_status()
            self.jobs.add(name)
        elif op == "delete-job":
            name = self.rng.choice(sorted(self.jobs))
            api.delete(f"{JOBS_PATH}/{name}").raise_for_status()
            self.jobs.discard(name)
            self.suspended.discard(name)
        else:
            name = self.rng.choice(sorted(self.jobs))
            suspend = op == "suspend-job"
            api.patch(f"{JOBS_PATH}/{name}", json={"spec": {"suspend": suspend}},
                      headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()  # fmt: skip
            (self.suspended.add if suspend else self.suspended.discard)(name)
        self.operations[op] += 1

    def fault(self, target: str) -> None:
        """kill -9 of the operator or of localkube, then its restart, as a supervisor would."""
        if target == "operator":
            assert self.cluster.operator is not None
            os.killpg(self.cluster.operator.pid, signal.SIGKILL)
            self.cluster.operator.wait()
            start_operator(self.cluster)
            self.generation += 1
            self.generation_started = time.monotonic()
            self.faults["operator kill -9"] += 1
        else:
            assert self.cluster.localkube is not None
            self.cluster.localkube.kill()
            self.cluster.localkube.start(timeout=START_S)
            self.faults["localkube kill -9"] += 1

    def check(self, api: httpx.Client) -> None:
        """Waits for the invariants to hold; what still breaks them after SETTLE_S counts as violations."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            found = invariants.violations(api, CLUSTERS_NS, self.want) + job_violations(api, self.suspended)
            if not found:
                return
            if time.monotonic() > deadline:
                self.violations += found
                return
            time.sleep(2)

    def sample(self, started: float) -> None:
        assert self.cluster.operator is not None
        minute = round((time.monotonic() - started) / 60, 2)
        rss, anon = memory_mb(self.cluster.operator.pid)
        self.rss.append((minute, rss, anon, self.generation))

    def run(self, minutes: float, fault_every: dict[str, float]) -> int:
        """Rounds until `minutes` have passed; `fault_every` is the mean seconds between kills of each target
        ("operator", "localkube"), exponentially distributed."""
        started = time.monotonic()
        deadline = started + minutes * 60
        rounds = 0
        next_fault = {t: started + self.rng.expovariate(1 / mean) for t, mean in fault_every.items()}
        while time.monotonic() < deadline:
            with self.client() as api:
                for _ in range(OPS_PER_ROUND):
                    try:
                        self.operate(api)
                    except httpx.HTTPError as e:  # counted, not fatal: the next round goes on
                        self.operations[f"failed: {type(e).__name__}"] += 1
                    time.sleep(PAUSE_S)
            for target, due in next_fault.items():
                if time.monotonic() >= due:
                    self.fault(target)
                    next_fault[target] = time.monotonic() + self.rng.expovariate(1 / fault_every[target])
            with self.client() as api:
                self.check(api)
            self.sample(started)
            rounds += 1
        return rounds

    def warm_growth(self) -> dict[int, dict[str, float]]:
        """For each operator generation sampled past WARM_S: for how many minutes, and for its RSS and its
        anonymous part, the last sample minus the first warm one (MB) and the least-squares slope of all its
        warm samples (MB an hour; a single pair of samples says less than the line through all of them)."""
        growth: dict[int, dict[str, float]] = {}
        for generation in sorted({g for *_, g in self.rss}):
            samples = [sample[:3] for sample in self.rss if sample[3] == generation]
            warm = [sample for sample in samples if sample[0] - samples[0][0] >= WARM_S / 60]
            if len(warm) < 2 or warm[-1][0] == warm[0][0]:
                continue
            growth[generation] = {"warm_minutes": round(warm[-1][0] - warm[0][0], 1)}
            for column, name in ((1, "rss"), (2, "anon")):
                points = [(sample[0], sample[column]) for sample in warm]
                growth[generation][f"{name}_growth_mb"] = round(points[-1][1] - points[0][1], 1)
                growth[generation][f"{name}_slope_mb_per_h"] = round(slope(points) * 60, 2)
        return growth


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of y over x."""
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)


def memory_mb(pid: int) -> tuple[float, float]:
    """A process's RSS and its anonymous part, in MB. The rest is file pages (code, mapped libraries), which
    the kernel drops and reads back as the machine's other processes need memory: noise to a slope."""
    kb = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon"):
            kb[name] = int(value.split()[0])
    return round(kb["VmRSS"] / 1024, 1), round(kb["RssAnon"] / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--clusters", type=int, default=6, help="RayClusters alive at most at once")
    parser.add_argument("--jobs", type=int, default=4, help="RayJobs alive at most at once")
    parser.add_argument(
        "--localkube-fault-every", type=float, default=480.0, help="mean seconds between kills of localkube"
    )
    parser.add_argument("--operator-fault-every", type=float, default=480.0,
                        help="mean seconds between kills of the operator")  # fmt: skip
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    # A TERM (a shell's background job ignores INT) stops the soak through the `finally` below, children too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("soak: stopped by SIGTERM"))
    workdir = Path(tempfile.mkdtemp(prefix="kuberay-soak-"))
    cluster = Cluster(workdir, concurrency=4, qps=100, burst=200)
    try:
        # Not `start_localkube()`: its 30 s bound is too short on a loaded machine, and the instance is
        # assigned before it starts so that the `finally` stops it whatever happens.
        cluster.localkube = LocalKubeProcess(workdir / "localkube")
        cluster.localkube.start(timeout=START_S)
        cluster.kubeconfig = cluster.localkube.kubeconfig
        cluster.localkube.apply(crd.crds())
        cluster.localkube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                                 for ns in (CLUSTERS_NS, JOBS_NS)])  # fmt: skip
        start_operator(cluster)
        soak = Soak(cluster, random.Random(seed), args.clusters, args.jobs)
        fault_every = {"localkube": args.localkube_fault_every, "operator": args.operator_fault_every}
        rounds = soak.run(args.minutes, fault_every)
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps({
        "minutes": args.minutes, "seed": seed, "rounds": rounds,
        "operations": sum(soak.operations.values()), "operations_by_kind": dict(soak.operations),
        "faults": sum(soak.faults.values()), "faults_by_kind": dict(soak.faults),
        "violations": len(soak.violations), "first_violations": soak.violations[:10],
        "operator_rss_mb": soak.rss, "warm_rss_by_generation": soak.warm_growth(),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
