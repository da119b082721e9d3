"""A RayService reconciler wired to the fake API server (`fakekube`), a fake clock and a fake Ray head,
and the steps of the controllers it leans on that do not run here (the RayCluster controller bringing a
cluster up: `Bench.bring_up`; the EndpointSlice controller counting serve endpoints: `endpoints`).

`FakeServe` is a fake, and says so: it answers the dashboard's Serve API (keeping each cluster's last
declarative config, reporting every application in it RUNNING) and the Serve proxy's health check, on an
httpx transport, where the integration tier has a real HTTP stand-in and the e2e tier real Ray.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from typing import Any

import httpx

from kuberay.api.features import FeatureGates
from kuberay.controllers.dashboards import DashboardAccess
from kuberay.controllers.rayservice.context import ENDPOINT_SLICE, Caches, Options
from kuberay.controllers.rayservice.reconciler import RayServiceReconciler
from kuberay.rayresources import RAYCLUSTER, RAYSERVICE
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.resources import POD, SERVICE, ObjectKey
from unit.controllers.fakekube import Bench

START = datetime(2026, 1, 1, tzinfo=UTC)
NS = "ns"
SERVE_CONFIG = "applications:\n- name: fruit_app\n  import_path: fruit.app\n  route_prefix: /fruit\n"
HEAD = {
    "rayStartParams": {},
    "template": {
        "spec": {
            "containers": [
                {
                    "name": "ray-head",
                    "image": "rayproject/ray:2.46.0",
                    "ports": [
                        {"name": "gcs-server", "containerPort": 6379},
                        {"name": "dashboard", "containerPort": 8265},
                        {"name": "client", "containerPort": 10001},
                        {"name": "serve", "containerPort": 8000},
                    ],
                }
            ]
        }
    },
}


def worker_group(name: str) -> dict[str, Any]:
    container = {"name": "ray-worker", "image": "rayproject/ray:2.46.0"}
    return {
        "groupName": name,
        "replicas": 1,
        "minReplicas": 1,
        "maxReplicas": 2,
        "rayStartParams": {},
        "template": {"spec": {"containers": [container]}},
    }


def rayservice(name: str = "svc", **spec: Any) -> dict[str, Any]:
    cluster = {"rayVersion": "2.46.0", "headGroupSpec": HEAD, "workerGroupSpecs": [worker_group("small")]}
    return {
        "apiVersion": RAYSERVICE.api_version,
        "kind": "RayService",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"serveConfigV2": SERVE_CONFIG, "rayClusterConfig": cluster, **spec},
    }


class FakeServe:
    def __init__(self) -> None:
        self.configs: dict[str, list[dict[str, Any]]] = {}  # by cluster

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/-/healthz":
            return httpx.Response(200, text="success")
        cluster = request.url.host.split("-head-svc.")[0]
        if request.method == "PUT":
            self.configs.setdefault(cluster, []).append(json.loads(request.content))
            return httpx.Response(200)
        submitted = self.configs.get(cluster) or [{}]
        apps = {
            app["name"]: {"name": app["name"], "status": "RUNNING", "message": "", "deployments": {}}
            for app in submitted[-1].get("applications") or ()
        }
        return httpx.Response(200, json={"applications": apps})


class World(Bench):
    def __init__(self, gates: FeatureGates | None = None) -> None:
        super().__init__(START)
        self.serve = FakeServe()
        self.http = httpx.AsyncClient(transport=httpx.MockTransport(self.serve.handle))
        caches = Caches(*(self.kube.store(r) for r in (RAYSERVICE, RAYCLUSTER, POD, SERVICE, ENDPOINT_SLICE)))
        options = Options(gates=gates or FeatureGates())
        self.reconciler = RayServiceReconciler(
            self.kube, caches, DashboardAccess(self.http), options, self.clock, self.events, random.Random(7)
        )

    async def reconcile(self, name: str = "svc") -> Result | TemporaryError:
        return await self.run(self.reconciler.reconcile, ObjectKey(NS, name))

    def service(self, name: str = "svc") -> dict[str, Any]:
        return self.kube.objects(RAYSERVICE)[name]

    def status(self, name: str = "svc") -> dict[str, Any]:
        return self.service(name).get("status") or {}

    def clusters(self) -> dict[str, dict[str, Any]]:
        return self.kube.objects(RAYCLUSTER)

    def endpoints(self, service: str, ready: int) -> None:
        """What the EndpointSlice controller would write for `service`: `ready` ready pods."""
        endpoints = [
            {"conditions": {"ready": True}, "targetRef": {"kind": "Pod", "uid": f"{service}-{i}"}}
            for i in range(ready)
        ]
        body = {
            "apiVersion": ENDPOINT_SLICE.api_version,
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service}-abcde",
                "namespace": NS,
                "labels": {"kubernetes.io/service-name": service},
            },
            "endpoints": endpoints,
        }
        self.kube.put(ENDPOINT_SLICE, body)
