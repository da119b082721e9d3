"""A RayJob reconciler wired to the fake API server (`fakekube`), a fake clock, the job-status poller on a
fake dashboard (`fakedashboard`), and the steps of the controllers it leans on that do not run here (the
RayCluster controller bringing a cluster up, the Job controller finishing the submitter)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx

from kuberay.api.raycluster import RayCluster
from kuberay.builders import service as service_builder
from kuberay.controllers.dashboards import DashboardAccess
from kuberay.controllers.rayjob.decision import Settings
from kuberay.controllers.rayjob.poller import JobStatusPoller
from kuberay.controllers.rayjob.reconciler import RAYCLUSTER, RAYJOB, Caches, Options, RayJobReconciler
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.resources import JOB, POD, SERVICE, ObjectKey
from unit.controllers.fakekube import Events, FakeClient
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


class World:
    def __init__(self, settings: Settings | None = None) -> None:
        self.clock = FakeClock(NOW)
        self.kube = FakeClient(self.clock)
        self.events = Events()
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
        """One pass; a temporary error is returned, as the controller would back off and retry."""
        try:
            return await self.reconciler.reconcile(KEY)
        except TemporaryError as e:
            return e

    async def polled(self) -> None:
        """Lets the poller's worker answer what the last pass asked of it."""
        for _ in range(100):
            await asyncio.sleep(0)
            if not any(entry.queued for entry in self.poller._entries.values()):
                return
        raise AssertionError("the poller did not answer")

    def job(self) -> dict[str, Any]:
        return self.kube.objects(RAYJOB)["job"]

    def status(self) -> dict[str, Any]:
        return self.job().get("status") or {}

    def bring_up(self, cluster_name: str) -> None:
        """What the RayCluster controller would do: the head Service and pod, and the cluster ready."""
        cluster = self.kube.objects(RAYCLUSTER)[cluster_name]
        self.kube.put(SERVICE, service_builder.build_head_service(RayCluster.parse(cluster)))
        head = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{cluster_name}-head",
                "namespace": NS,
                "labels": {"ray.io/cluster": cluster_name, "ray.io/node-type": "head"},
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        self.kube.put(POD, head)
        status = {"state": "ready", "head": {"podName": f"{cluster_name}-head"}}
        self.kube.put(RAYCLUSTER, {**cluster, "status": status})

    def finish_submitter(self) -> None:
        """What the Job controller would write once the submitter's pod exits 0."""
        job = self.kube.objects(JOB)["job"]
        complete = {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T12:00:00Z"}
        status = {"succeeded": 1, "completionTime": "2026-01-01T12:00:00Z", "conditions": [complete]}
        self.kube.put(JOB, {**job, "status": status})
