from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kuberay.api.raycluster import RayCluster
from kuberay.controllers.raycluster import finalizer
from kuberay.controllers.raycluster.metrics import ClusterMetrics
from kuberay.runtime.cache import Store, prepare
from kuberay.runtime.resources import ObjectKey


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, 300), ("60", 60), ("0", 300), ("-5", 300), ("soon", 300)]
)
def test_deletion_timeout(value: str | None, seconds: int) -> None:
    annotations = {} if value is None else {"ray.io/gcs-ft-deletion-timeout": value}
    cluster = RayCluster.parse(
        {"metadata": {"annotations": annotations}, "spec": {"headGroupSpec": {"template": {}}}}
    )
    assert finalizer.deletion_timeout(cluster) == seconds


@pytest.mark.parametrize(
    ("conditions", "finished"),
    [
        ([{"type": "Complete", "status": "True"}], True),
        ([{"type": "Failed", "status": "True"}], True),
        ([{"type": "FailureTarget", "status": "True"}], True),
        ([{"type": "Complete", "status": "False"}, {"type": "Suspended", "status": "True"}], False),
        ([], False),
    ],
)
def test_job_finished(conditions: list[dict[str, str]], finished: bool) -> None:
    assert finalizer.job_finished({"status": {"conditions": conditions}}) is finished


def cluster(name: str, provisioned: bool, owner: str | None = None) -> dict[str, object]:
    labels = {"ray.io/originated-from-crd": owner} if owner else {}
    status = "True" if provisioned else "False"
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": labels,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "status": {"conditions": [{"type": "RayClusterProvisioned", "status": status}]},
    }


def test_metrics_describe_the_cached_clusters_and_forget_deleted_ones() -> None:
    registry, store = CollectorRegistry(), Store()
    store.upsert(prepare(cluster("a", provisioned=True, owner="RayJob")))
    store.upsert(prepare(cluster("b", provisioned=False)))
    metrics = ClusterMetrics(registry, store)
    wire = cluster("a", provisioned=True)
    model = RayCluster.parse({"metadata": wire["metadata"], "spec": {"headGroupSpec": {"template": {}}}})
    metrics.provisioned(model, datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC))
    text = generate_latest(registry).decode()
    assert 'kuberay_cluster_info{name="a",namespace="ns",owner_kind="RayJob",uid="uid-a"} 1.0' in text
    assert 'kuberay_cluster_info{name="b",namespace="ns",owner_kind="None",uid="uid-b"} 1.0' in text
    assert (
        'kuberay_cluster_condition_provisioned{condition="false",name="b",namespace="ns",uid="uid-b"} 1.0'
        in text
    )
    assert 'kuberay_cluster_provisioned_duration_seconds{name="a",namespace="ns",uid="uid-a"} 90.0' in text
    metrics.forget(ObjectKey("ns", "a"))
    assert "kuberay_cluster_provisioned_duration_seconds{" not in generate_latest(registry).decode()
