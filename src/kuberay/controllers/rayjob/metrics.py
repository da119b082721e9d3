"""The RayJob metrics (upstream `metrics/ray_job_metrics.go`), served with `--enable-metrics`.

- `kuberay_job_execution_duration_seconds{name,namespace,uid,job_deployment_status,retry_count}`: set when a
  status write moves a job from a non-terminal state to Complete, Failed or Retrying; the seconds since the
  attempt's `startTime`. A RayJob's series are dropped when the RayJob is gone.
- `kuberay_job_info{name,namespace,uid}` and `kuberay_job_deployment_status{...,deployment_status}`: always 1,
  computed at scrape time from the RayJob cache, so they can never describe a RayJob that no longer exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kuberay.api.rayjob import JobDeploymentStatus, RayJobStatusDict
from kuberay.controllers.rayjob.decision import deployment_terminal
from kuberay.controllers.rayjob.state import parse_time

DURATION_HELP = (
    "Duration from when the RayJob CR’s JobDeploymentStatus transitions from Initializing to either the "
    "Retrying state or a terminal state, such as Complete or Failed. The Retrying state indicates that the CR "
    "previously failed and that spec.backoffLimit is enabled."
)

_DurationKey = tuple[str, str, str, str, str]


class RayJobMetrics(Collector):
    def __init__(self, rayjobs: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self._rayjobs = rayjobs
        self._durations: dict[_DurationKey, float] = {}

    def register(self, registry: CollectorRegistry) -> RayJobMetrics:
        registry.register(self)
        return self

    def observe_transition(
        self, rayjob: Mapping[str, Any], old: RayJobStatusDict, new: RayJobStatusDict, now: datetime
    ) -> None:
        """Records the attempt's duration if this status write ended it (upstream `emitRayJobExecutionDuration`)."""
        after = new.get("jobDeploymentStatus") or ""
        started = parse_time(new.get("startTime"))
        if deployment_terminal(old.get("jobDeploymentStatus")) or started is None:
            return
        if not (deployment_terminal(after) or after == JobDeploymentStatus.RETRYING):
            return
        metadata = rayjob["metadata"]
        key = (
            metadata["name"],
            metadata["namespace"],
            metadata.get("uid") or "",
            after,
            str(old.get("failed") or 0),
        )
        self._durations[key] = (now - started).total_seconds()

    def forget(self, name: str, namespace: str) -> None:
        for key in [k for k in self._durations if k[:2] == (name, namespace)]:
            del self._durations[key]

    def collect(self) -> Iterator[Metric]:
        duration = GaugeMetricFamily(
            "kuberay_job_execution_duration_seconds",
            DURATION_HELP,
            labels=["name", "namespace", "uid", "job_deployment_status", "retry_count"],
        )
        for key, seconds in self._durations.items():
            duration.add_metric(list(key), seconds)
        info = GaugeMetricFamily(
            "kuberay_job_info",
            "Metadata information about RayJob custom resources",
            labels=["name", "namespace", "uid"],
        )
        status = GaugeMetricFamily(
            "kuberay_job_deployment_status",
            "The RayJob's current deployment status",
            labels=["name", "namespace", "uid", "deployment_status"],
        )
        for rayjob in self._rayjobs():
            metadata = rayjob["metadata"]
            labels = [metadata["name"], metadata.get("namespace") or "", metadata.get("uid") or ""]
            info.add_metric(labels, 1)
            deployment = (rayjob.get("status") or {}).get("jobDeploymentStatus") or ""
            status.add_metric([*labels, deployment], 1)
        yield from (duration, info, status)
