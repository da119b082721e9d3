"""A RayJob reconciler wired to the fake API server (`fakekube`), a fake clock, the job-status poller on a
fake dashboard (`fakedashboard`), and the steps of the controllers it leans on that do not run here (the
RayCluster controller bringing a cluster up: `Bench.bring_up`; the Job controller finishing the submitter)."""

from __future__ import annotations

import random
from typing import Any

import httpx

from kuberay.controllers.dashboards import DashboardAccess
from kuberay.controllers.rayjob.decision import Settings
from kuberay.controllers.rayjob.poller import JobStatusPoller
from kuberay.controllers.rayjob.reconciler import Caches, Options, RayJobReconciler
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.resources import JOB, POD, SERVICE, ObjectKey
from support.eventually import eventually
from unit.controllers.fakekube import Bench
from unit.controllers.rayjob.fakedashboard import FakeDashboard
from unit.controllers.rayjob.jobs import CLUSTER_SPEC, NOW

NS = "ns"
KEY = ObjectKey(NS, "job")


def rayjob(**spec: Any) -> dict[str, Any]:
    body = {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": CLUSTER_SPEC, **spec}
    return {
        "apiVersion": RAYJOB.api_version,
        "kind": "RayJob",
        "metadata": {"name": "job", "namespace": NS},
        "spec": body,
    }


class World(Bench):
    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(NOW)
        self.dashboard = FakeDashboard()
        http = httpx.AsyncClient(transport=httpx.MockTransport(self.dashboard))
        self.poller = JobStatusPoller(http, workers=1, min_interval=0.0, clock=self.clock)
        caches = Caches(*(self.kube.store(r) for r in (RAYJOB, RAYCLUSTER, POD, SERVICE, JOB)))
        self.reconciler = RayJobReconciler(
            self.kube,
            caches,
            self.poller,
            DashboardAccess(http),
            Options(settings=settings or Settings()),
            self.clock,
            recorder=self.events,
            rng=random.Random(7),
        )

    async def reconcile(self) -> Result | TemporaryError:
        return await self.run(self.reconciler.reconcile, KEY)

    async def polled(self) -> None:
        """Lets the poller's worker answer what the last pass asked of it."""
        await eventually(
            lambda: not any(entry.queued for entry in self.poller._entries.values()),
            5,
            "the poller's answer",
            every=0,
        )

    def job(self) -> dict[str, Any]:
        return self.kube.objects(RAYJOB)["job"]

    def status(self) -> dict[str, Any]:
        return self.job().get("status") or {}

    def finish_submitter(self) -> None:
        """What the Job controller would write once the submitter's pod exits 0."""
        job = self.kube.objects(JOB)["job"]
        complete = {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T12:00:00Z"}
        status = {"succeeded": 1, "completionTime": "2026-01-01T12:00:00Z", "conditions": [complete]}
        self.kube.put(JOB, {**job, "status": status})
