"""The RayService metrics (upstream `metrics/ray_service_metrics.go`), served with `--enable-metrics`, all
computed at scrape time from the RayService cache, so they never describe a RayService that is gone:

- `kuberay_service_info{name,namespace,uid}`: 1;
- `kuberay_service_condition_ready{name,namespace,uid,condition}`: 1, `condition` "true" iff `Ready` is True;
- `kuberay_service_condition_upgrade_in_progress{...,condition}`: 1, from `UpgradeInProgress`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kuberay.api.rayservice import RayServiceConditionType
from kuberay.controllers.rayservice.status import is_true

LABELS = ["name", "namespace", "uid"]


class RayServiceMetrics(Collector):
    def __init__(self, rayservices: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self._rayservices = rayservices

    def register(self, registry: CollectorRegistry) -> RayServiceMetrics:
        registry.register(self)
        return self

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "kuberay_service_info", "Metadata information about RayService custom resources", labels=LABELS
        )
        ready = GaugeMetricFamily(
            "kuberay_service_condition_ready",
            "Describes whether the RayService is ready. Ready means users can send requests to the underlying "
            "cluster and the number of serve endpoints is greater than 0.",
            labels=[*LABELS, "condition"],
        )
        upgrading = GaugeMetricFamily(
            "kuberay_service_condition_upgrade_in_progress",
            "Describes whether the RayService is performing a zero-downtime upgrade.",
            labels=[*LABELS, "condition"],
        )
        for service in self._rayservices():
            metadata = service["metadata"]
            labels = [metadata["name"], metadata.get("namespace") or "", metadata.get("uid") or ""]
            status = service.get("status") or {}
            info.add_metric(labels, 1)
            ready.add_metric([*labels, _flag(is_true(status, RayServiceConditionType.READY))], 1)
            in_progress = is_true(status, RayServiceConditionType.UPGRADE_IN_PROGRESS)
            upgrading.add_metric([*labels, _flag(in_progress)], 1)
        yield from (info, ready, upgrading)


def _flag(value: bool) -> str:
    return "true" if value else "false"
