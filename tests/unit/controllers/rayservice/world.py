"""A RayService reconciler wired to the fake API server (`fakekube`), a fake clock and a fake Ray head,
and the steps of the controllers it leans on that do not run here (the RayCluster controller bringing a
cluster up, the EndpointSlice controller counting serve endpoints).

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
from kuberay.api.raycluster import RayCluster
from kuberay.builders import service as service_builder
from kuberay.controllers.dashboards import DashboardAccess
from kuberay.controllers.rayservice.context import ENDPOINT_SLICE, RAYCLUSTER, RAYSERVICE, Caches, Options
from kuberay.controllers.rayservice.reconciler import RayServiceReconciler
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.resources import POD, SERVICE, ObjectKey
from unit.controllers.fakekube import Events, FakeClient

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


class World:
    def __init__(self, gates: FeatureGates | None = None) -> None:
        self.clock = FakeClock(START)
        self.kube = FakeClient(self.clock)
        self.events = Events()
        self.serve = FakeServe()
        self.http = httpx.AsyncClient(transport=httpx.MockTransport(self.serve.handle))
        caches = Caches(*(self.kube.store(r) for r in (RAYSERVICE, RAYCLUSTER, POD, SERVICE, ENDPOINT_SLICE)))
        options = Options(gates=gates or FeatureGates())
        self.reconciler = RayServiceReconciler(
            self.kube, caches, DashboardAccess(self.http), options, self.clock, self.events, random.Random(7)
        )

    async def reconcile(self, name: str = "svc") -> Result | TemporaryError:
        """One pass; a temporary error is returned, as the controller would back off and retry."""
        try:
            return await self.reconciler.reconcile(ObjectKey(NS, name))
        except TemporaryError as e:
            return e

    def service(self, name: str = "svc") -> dict[str, Any]:
        return self.kube.objects(RAYSERVICE)[name]

    def status(self, name: str = "svc") -> dict[str, Any]:
        return self.service(name).get("status") or {}

    def clusters(self) -> dict[str, dict[str, Any]]:
        return self.kube.objects(RAYCLUSTER)

    def bring_up(self, cluster_name: str) -> None:
        """What the RayCluster controller and the node would do: a running, ready head pod, the head
        Service, and `HeadPodReady` on the cluster."""
        cluster = self.clusters()[cluster_name]
        model = RayCluster.parse(cluster)
        self.kube.put(SERVICE, service_builder.build_head_service(model))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{cluster_name}-head",
                "namespace": NS,
                "labels": {"ray.io/cluster": cluster_name, "ray.io/node-type": "head"},
            },
            "status": {
                "phase": "Running",
                "podIP": f"10.0.0.{len(self.clusters())}",
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        self.kube.put(POD, pod)
        ready = {
            "type": "HeadPodReady",
            "status": "True",
            "reason": "HeadPodRunningAndReady",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        self.kube.put(RAYCLUSTER, {**cluster, "status": {"state": "ready", "conditions": [ready]}})

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
