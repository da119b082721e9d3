"""RayJobs and facts for the state-machine tests: a valid minimal RayJob and a fixed moment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kuberay.api.rayjob import RayJob
from kuberay.controllers.rayjob.decision import ClusterFacts
from kubesemantics.times import format_time

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
ADDRESS = "job-abcde-head-svc.ns.svc.cluster.local:8265"
READY = ClusterFacts(exists=True, status={"state": "ready"}, dashboard_address=ADDRESS)
NOT_READY = ClusterFacts(exists=True, status={"state": "", "desiredWorkerReplicas": 1})
CLUSTER_SPEC = {
    "rayVersion": "2.46.0",
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}},
    },
    "workerGroupSpecs": [
        {
            "groupName": "small",
            "replicas": 1,
            "minReplicas": 1,
            "maxReplicas": 2,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.46.0"}]}},
        }
    ],
}


def at(seconds: float) -> str:
    """The wire form of NOW + seconds."""
    return format_time(NOW + timedelta(seconds=seconds))


def rayjob(
    status: dict[str, Any] | None = None, *, metadata: dict[str, Any] | None = None, **spec: Any
) -> RayJob:
    body: dict[str, Any] = {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": CLUSTER_SPEC, **spec}
    if body.get("clusterSelector"):
        body.pop("rayClusterSpec")
    meta = {"name": "job", "namespace": "ns", "uid": "u1", "finalizers": ["ray.io/rayjob-finalizer"]}
    return RayJob.parse({"metadata": {**meta, **(metadata or {})}, "spec": body, "status": status or {}})


def running(**status: Any) -> dict[str, Any]:
    """The status of a job that has been Running since a minute ago."""
    return {
        "jobDeploymentStatus": "Running",
        "jobStatus": "RUNNING",
        "jobId": "job-xyz",
        "rayClusterName": "job-abcde",
        "dashboardURL": ADDRESS,
        "startTime": at(-60),
        **status,
    }
