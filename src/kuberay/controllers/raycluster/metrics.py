"""The RayCluster metrics of upstream's `RayClusterMetricsManager`, registered only with `--enable-metrics`.

`kuberay_cluster_provisioned_duration_seconds` is observed by the reconciler when `RayClusterProvisioned`
first turns True (after the status write) and dropped when the RayCluster is gone.
`kuberay_cluster_info` and `kuberay_cluster_condition_provisioned` are computed at scrape time from the
RayCluster cache, so they always describe exactly the clusters that exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster, RayClusterConditionType
from kuberay.runtime.cache import Store
from kuberay.runtime.resources import ObjectKey
from kubesemantics import times
from kubesemantics.conditions import is_condition_true


class _CacheCollector(Collector):
    def __init__(self, clusters: Store) -> None:
        self.clusters = clusters

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "kuberay_cluster_info",
            "Metadata information about RayCluster custom resources",
            labels=["name", "namespace", "uid", "owner_kind"],
        )
        provisioned = GaugeMetricFamily(
            "kuberay_cluster_condition_provisioned",
            "Indicates whether the RayCluster is provisioned",
            labels=["name", "namespace", "uid", "condition"],
        )
        for cluster in self.clusters.list():
            metadata = cluster["metadata"]
            labels = metadata.get("labels") or {}
            ident = [
                str(metadata.get("name")),
                str(metadata.get("namespace")),
                str(metadata.get("uid") or ""),
            ]
            info.add_metric([*ident, str(labels.get(constants.RAY_ORIGINATED_FROM_CRD_LABEL, "None"))], 1)
            true = is_condition_true(cluster.get("status") or {}, RayClusterConditionType.PROVISIONED)
            provisioned.add_metric([*ident, "true" if true else "false"], 1)
        yield info
        yield provisioned


class ClusterMetrics:
    def __init__(self, registry: CollectorRegistry, clusters: Store) -> None:
        self.duration = Gauge(
            "kuberay_cluster_provisioned_duration_seconds",
            "The time, in seconds, when a RayCluster's `RayClusterProvisioned` status transitions from false "
            "(or unset) to true",
            ["name", "namespace", "uid"],
            registry=registry,
        )
        registry.register(_CacheCollector(clusters))
        self._uids: dict[ObjectKey, set[str]] = {}

    def provisioned(self, cluster: RayCluster, now: datetime) -> None:
        text = cluster.metadata.creation_timestamp
        if not text:
            return
        uid = cluster.metadata.uid or ""
        self._uids.setdefault(ObjectKey(cluster.namespace, cluster.name), set()).add(uid)
        self.duration.labels(cluster.name, cluster.namespace, uid).set(
            (now - times.parse_time(text)).total_seconds()
        )

    def forget(self, key: ObjectKey) -> None:
        """Drops the duration series of a RayCluster that no longer exists (any uid)."""
        for uid in self._uids.pop(key, ()):
            self.duration.remove(key.name, key.namespace, uid)
