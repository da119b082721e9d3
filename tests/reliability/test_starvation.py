"""Starvation (kuberay#3909): one RayCluster whose reconcile fails every time, next to HEALTHY healthy ones.

The failing one is accepted by admission (the CRD's schema leaves pod-template labels free) but its head pod
is refused by the API server on every try (a label value Kubernetes does not allow), so each reconcile of it
ends in an error and the key goes to the work queue's per-object backoff. The operator runs with upstream's
`--reconcile-concurrency` (`reconcileConcurrency`) at CONCURRENCY, in this process so that every reconcile
can be recorded (a spy around the controller's reconcile call; nothing is faked).

What must hold, shown by counts and order rather than by speed:
- every healthy cluster becomes ready, with one head pod each;
- the failing cluster is retried, each retry (once its owned objects stopped changing) no sooner than the
  delay its backoff promised (which doubles),
  the Warning Events on it count the failures, and healthy reconciles run between its tries;
- the failing key never holds more than one worker, and the workers did run CONCURRENCY at a time.

HEALTHY is 200, not the issue's 500, to keep the file within its share of the suite's time (benchmarks/README.md
has the measurement). Nothing it shows depends on the number beyond there being many more healthy clusters
than workers (CONCURRENCY), which 200 keeps; set it to 500 to run the issue's case.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from integration.inprocess import running_operator
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.controller import Result
from kuberay.runtime.ratelimit import ItemBackoff
from kuberay.runtime.resources import EVENT, POD, ObjectKey
from support.eventually import eventually

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ray-cluster.minimal.yaml"
HEALTHY = 200
CONCURRENCY = 4
FAILING = "refused-head"


@dataclass
class Spy:
    """Every reconcile the RayCluster controller ran: (key name, start, end, ok), and the most in flight."""

    calls: list[tuple[str, float, float, bool]] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    most_in_flight: int = 0

    def wrap(
        self, reconcile: Callable[[ObjectKey], Awaitable[Result]]
    ) -> Callable[[ObjectKey], Awaitable[Result]]:
        async def spied(key: ObjectKey) -> Result:
            self.in_flight[key.name] = self.in_flight.get(key.name, 0) + 1
            assert self.in_flight[key.name] == 1, f"{key} reconciled twice at once"
            self.most_in_flight = max(self.most_in_flight, sum(self.in_flight.values()))
            start, ok = time.monotonic(), False
            try:
                result = await reconcile(key)
                ok = True
                return result
            finally:
                self.in_flight[key.name] -= 1
                if not self.in_flight[key.name]:
                    del self.in_flight[key.name]
                self.calls.append((key.name, start, time.monotonic(), ok))

        return spied


def _cluster(name: str) -> dict[str, Any]:
    cluster: dict[str, Any] = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    cluster["metadata"] = {"name": name}
    for group in cluster["spec"]["workerGroupSpecs"]:
        group.update(replicas=0, minReplicas=0)
    return cluster


async def test_a_cluster_failing_every_reconcile_starves_none_of_the_others(localkube) -> None:
    async with running_operator(localkube, lambda manager, settings: None,
                                reconcile_concurrency=CONCURRENCY, qps=1000, burst=2000) as op:  # fmt: skip
        (controller,) = [c for c in op.manager.controllers if c.name == "raycluster"]
        assert controller.concurrency == CONCURRENCY
        spy = Spy()
        controller.reconcile = spy.wrap(controller.reconcile)
        namespace = op.namespaces[0]
        failing = _cluster(FAILING)
        failing["spec"]["headGroupSpec"]["template"]["metadata"] = {"labels": {"team": "not a valid value!"}}
        await op.client.create(RAYCLUSTER, {**failing, "metadata": {"name": FAILING, "namespace": namespace}})
        names = [f"healthy-{i:03d}" for i in range(HEALTHY)]
        gate = asyncio.Semaphore(16)

        async def create(name: str) -> None:
            async with gate:
                body = {**_cluster(name), "metadata": {"name": name, "namespace": namespace}}
                await op.client.create(RAYCLUSTER, body)

        await asyncio.gather(*(create(name) for name in names))
        clusters = op.manager.cache(RAYCLUSTER)

        async def all_ready() -> bool:  # read from the operator's cache, which mirrors the API server
            ready = {
                c["metadata"]["name"]
                for c in clusters.list(namespace)
                if (c.get("status") or {}).get("state") == "ready"
            }
            return ready == set(names)

        await eventually(all_ready, timeout=240, what=f"{HEALTHY} healthy RayClusters ready")
        # The healthy ones can all be ready before the failing key's fifth try (each try ranks it behind newer
        # keys); its backoff is still short then, so the tries the checks below need come soon after.
        await eventually(lambda: _tries(spy) >= 5, timeout=30, what=f"five tries of {FAILING}")
        failures_seen = _tries(spy)

        pods = (await op.client.list_all(POD, namespace)).items
        heads = sorted(p["metadata"]["labels"]["ray.io/cluster"] for p in pods)
        assert heads == names  # one head each, and none for the refused one

        tries = [(start, end, ok) for name, start, end, ok in spy.calls if name == FAILING]
        assert len(tries) >= 5 and not any(ok for *_, ok in tries), tries
        backoff = ItemBackoff()  # the queue's per-object limiter, at its defaults
        promised = [backoff.when(FAILING) for _ in tries]
        # The first pass makes the head Service before it fails on the pod; the Service's event adds the
        # key while it is being processed, so it runs again as soon as that pass ends (client-go's queue
        # does the same). That pass's own retry is then superseded by the first retry's earlier due time
        # (a waiting key keeps its earliest), so the backoff shows undisturbed from the third try on.
        gaps = list(zip(tries, tries[1:], promised, strict=False))[2:]
        for (_, previous_end, _), (start, _, _), delay in gaps:
            assert start - previous_end >= delay, (start - previous_end, delay)
        # While the failing key waited out its backoff, the healthy ones went on.
        between = [
            sum(1 for name, start, _, _ in spy.calls if name != FAILING and a_end <= start < b_start)
            for (_, a_end, _), (b_start, _, _) in zip(tries, tries[1:], strict=False)
        ]
        assert sum(between) > 0, between
        assert len(tries) < len([c for c in spy.calls if c[0] != FAILING]) / 10
        assert 1 < spy.most_in_flight <= CONCURRENCY

        async def failure_events() -> int:
            events = (await op.client.list_all(EVENT, namespace)).items
            return sum(e.get("count") or 1 for e in events if e["involvedObject"]["name"] == FAILING
                       and e["reason"] == "FailedToCreateHeadPod")  # fmt: skip

        # Events are written asynchronously; each failed try records one (aggregated into a count).
        await eventually(
            lambda: _at_least(failure_events, failures_seen), timeout=30, what="the failures' Events"
        )


def _tries(spy: Spy) -> int:
    return sum(1 for call in spy.calls if call[0] == FAILING)


async def _at_least(count: Callable[[], Awaitable[int]], expected: int) -> bool:
    return await count() >= expected
