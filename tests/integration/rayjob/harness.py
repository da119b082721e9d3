"""The operator in this process (RayCluster and RayJob controllers) against a localkube, and RayJob helpers."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from integration.inprocess import running_operator
from kuberay.api.features import FeatureGates
from kuberay.controllers.rayjob import setup as rayjob_setup
from kuberay.controllers.rayjob.reconciler import RayJobReconciler
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.events import EventRecorder
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import EVENT, Resource
from support.eventually import eventually

IMAGE = "rayproject/ray:2.46.0"


def cluster_spec(head_annotations: Mapping[str, str] | None = None, workers: int = 0) -> dict[str, Any]:
    head_template: dict[str, Any] = {"spec": {"containers": [{"name": "ray-head", "image": IMAGE}]}}
    if head_annotations:
        head_template["metadata"] = {"annotations": dict(head_annotations)}
    groups = [
        {
            "groupName": "small",
            "replicas": workers,
            "minReplicas": 0,
            "maxReplicas": 2,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": IMAGE}]}},
        }
    ]
    return {"rayVersion": "2.46.0", "headGroupSpec": {"rayStartParams": {}, "template": head_template},
            "workerGroupSpecs": groups}  # fmt: skip


def rayjob(
    namespace: str, name: str = "job", cluster: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body = {
        "entrypoint": "python -c 'print(1)'",
        "rayClusterSpec": copy.deepcopy(cluster or cluster_spec()),
        **spec,
    }
    if body.get("clusterSelector"):
        body.pop("rayClusterSpec")
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": namespace},
            "spec": body}  # fmt: skip


@dataclass
class Operator:
    client: Client
    namespace: str
    manager: Manager
    reconciler: RayJobReconciler
    registry: CollectorRegistry
    recorder: EventRecorder

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        resource = RAYJOB if obj["kind"] == "RayJob" else RAYCLUSTER
        return await self.client.create(resource, obj)

    async def get(self, resource: Resource, name: str) -> dict[str, Any] | None:
        with contextlib.suppress(errors.NotFoundError):
            return await self.client.get(resource, name, self.namespace)
        return None

    async def rayjob(self, name: str = "job") -> dict[str, Any] | None:
        return await self.get(RAYJOB, name)

    async def cluster(self, name: str) -> dict[str, Any] | None:
        return await self.get(RAYCLUSTER, name)

    async def wait(self, probe: Callable[[], Awaitable[Any]], timeout: float = 60.0) -> Any:
        return await eventually(probe, timeout)

    async def wait_status(self, name: str = "job", timeout: float = 60.0, **want: Any) -> dict[str, Any]:
        """Waits until the RayJob's status has every `want` field; returns the RayJob."""
        last: dict[str, Any] = {}

        async def matches() -> dict[str, Any] | None:
            nonlocal last
            obj = await self.rayjob(name)
            last = (obj or {}).get("status") or {}
            return obj if obj and all(last.get(k) == v for k, v in want.items()) else None

        try:
            result: dict[str, Any] = await self.wait(matches, timeout)
        except AssertionError:
            raise AssertionError(f"RayJob {name} never had {want}; last status {last}") from None
        return result

    async def events(self, reason: str) -> list[dict[str, Any]]:
        await self.recorder.flush()
        listed = await self.client.list(EVENT, self.namespace)
        return [e for e in listed.items if e.get("reason") == reason]


@contextlib.asynccontextmanager
async def operator(
    localkube: Any, environ: Mapping[str, str] | None = None, gates: FeatureGates | None = None, **config: Any
) -> AsyncIterator[Operator]:
    async with running_operator(
        localkube, rayjob_setup.install, environ=environ, gates=gates, **config
    ) as run:
        (namespace,) = run.namespaces
        yield Operator(run.client, namespace, run.manager, run.reconciler, run.registry, run.recorder)
