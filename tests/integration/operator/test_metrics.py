"""The operator's /metrics, scraped while it runs against localkube (simulated node): every family of the
ecosystem spec §5.2 with upstream's names, labels and buckets, and OpenMetrics when the scraper asks for it.

The operator runs with leader election on (for `leader_election_master_status`) and `--enable-metrics`,
in its own namespace, holding a RayCluster, a RayJob and a RayService from `examples/`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from support import promql
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

# The operator dashboard's HeadPodReady panel reads kube-state-metrics, as upstream's does.
KUBE_STATE_METRICS = {"kube_pod_status_ready", "kube_pod_labels"}
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
LATENCY_BUCKETS = ["0.005", "0.025", "0.1", "0.25", "0.5", "1.0", "2.0", "4.0", "8.0", "15.0", "30.0", "60.0", "+Inf"]  # fmt: skip
SIZE_BUCKETS = [str(float(n)) for n in (64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)] + ["+Inf"]  # fmt: skip

# family → (type, the label names of its samples; None: the family is declared and may have no samples yet)
FAMILIES: dict[str, tuple[str, set[str] | None]] = {
    "controller_runtime_reconcile": ("counter", {"controller", "result"}),
    "controller_runtime_reconcile_errors": ("counter", None),
    "controller_runtime_terminal_reconcile_errors": ("counter", None),
    "controller_runtime_reconcile_panics": ("counter", None),
    "controller_runtime_reconcile_time_seconds": ("histogram", {"controller"}),
    "controller_runtime_max_concurrent_reconciles": ("gauge", {"controller"}),
    "controller_runtime_active_workers": ("gauge", {"controller"}),
    "workqueue_depth": ("gauge", {"name", "controller"}),
    "workqueue_adds": ("counter", {"name", "controller"}),
    "workqueue_queue_duration_seconds": ("histogram", {"name", "controller"}),
    "workqueue_work_duration_seconds": ("histogram", {"name", "controller"}),
    "workqueue_unfinished_work_seconds": ("gauge", {"name", "controller"}),
    "workqueue_longest_running_processor_seconds": ("gauge", {"name", "controller"}),
    "workqueue_retries": ("counter", None),
    "rest_client_requests": ("counter", {"code", "method", "host"}),
    "rest_client_request_duration_seconds": ("histogram", {"verb", "host"}),
    "rest_client_dns_resolution_duration_seconds": ("histogram", None),
    "rest_client_request_size_bytes": ("histogram", {"verb", "host"}),
    "rest_client_response_size_bytes": ("histogram", {"verb", "host"}),
    "rest_client_rate_limiter_duration_seconds": ("histogram", {"verb", "host"}),
    "rest_client_request_retries": ("counter", None),
    "leader_election_master_status": ("gauge", {"name"}),
    "process_cpu_seconds": ("counter", set()),
    "process_resident_memory_bytes": ("gauge", set()),
    "process_start_time_seconds": ("gauge", set()),
    "kuberay_cluster_provisioned_duration_seconds": ("gauge", {"name", "namespace", "uid"}),
    "kuberay_cluster_info": ("gauge", {"name", "namespace", "uid", "owner_kind"}),
    "kuberay_cluster_condition_provisioned": ("gauge", {"name", "namespace", "uid", "condition"}),
    "kuberay_job_execution_duration_seconds": ("gauge", None),
    "kuberay_job_info": ("gauge", {"name", "namespace", "uid"}),
    "kuberay_job_deployment_status": ("gauge", {"name", "namespace", "uid", "deployment_status"}),
    "kuberay_service_info": ("gauge", {"name", "namespace", "uid"}),
    "kuberay_service_condition_ready": ("gauge", {"name", "namespace", "uid", "condition"}),
    "kuberay_service_condition_upgrade_in_progress": ("gauge", {"name", "namespace", "uid", "condition"}),
}


@pytest.fixture(scope="module")
def scraped(localkube: LocalKubeProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OperatorProcess, str]]:  # fmt: skip
    namespace = f"metrics-{int(time.time() * 1000) % 10**8}"
    with localkube.client(timeout=30) as api:
        api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
        operator = OperatorProcess(
            localkube.kubeconfig, tmp_path_factory.mktemp("metrics") / "operator.log",
            f"--watch-namespace={namespace}", "--enable-leader-election=true",
            f"--leader-election-namespace={namespace}",
        ).start()  # fmt: skip
        try:
            for example, plural in (("ray-cluster.minimal.yaml", "rayclusters"), ("ray-job.interactive-mode.yaml", "rayjobs"), ("ray-service.yaml", "rayservices")):  # fmt: skip
                manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / example).read_text())
                api.post(f"/apis/ray.io/v1/namespaces/{namespace}/{plural}", json=manifest).raise_for_status()

            def provisioned() -> bool:
                cluster = api.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/minimal").json()
                conditions = (cluster.get("status") or {}).get("conditions") or []
                return any(c["type"] == "RayClusterProvisioned" and c["status"] == "True" for c in conditions)

            eventually(provisioned, 120, "the RayCluster provisioned", every=0.5)
            yield operator, namespace
        finally:
            operator.stop()
            api.delete(f"/api/v1/namespaces/{namespace}")


def _scrape(operator: OperatorProcess, accept: str = "") -> httpx.Response:
    headers = {"accept": accept} if accept else {}
    return httpx.get(f"http://127.0.0.1:{operator.metrics_port}/metrics", headers=headers, timeout=10)


def test_every_family_with_upstreams_labels(scraped: tuple[OperatorProcess, str]) -> None:
    operator, namespace = scraped
    reply = _scrape(operator)
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(reply.text)}
    for name, (kind, labels) in FAMILIES.items():
        assert name in families, f"{name} is not exported"
        assert families[name].type == kind, name
        if labels is not None:
            samples = [s for s in families[name].samples if not s.name.endswith(("_count", "_sum"))]
            assert samples, f"{name} has no samples"
            assert {frozenset(set(s.labels) - {"le"}) for s in samples} == {frozenset(labels)}, name

    def one(family: str, /, **labels: str) -> list[Sample]:
        return [s for s in families[family].samples if all(s.labels.get(k) == v for k, v in labels.items())]

    results = {
        s.labels["result"] for s in one("controller_runtime_reconcile", controller="raycluster") if s.value
    }
    assert results and results <= {"success", "error", "requeue", "requeue_after"}
    assert one("kuberay_cluster_info", name="minimal", namespace=namespace, owner_kind="None")[0].value == 1
    assert one("kuberay_cluster_condition_provisioned", name="minimal", condition="true")
    assert one("kuberay_cluster_provisioned_duration_seconds", name="minimal")[0].value > 0
    assert one("kuberay_job_info", name="interactive", namespace=namespace)
    assert one("kuberay_service_info", name="fruit-stand", namespace=namespace)
    assert one("leader_election_master_status", name="ray-operator-leader")[0].value == 1
    for histogram, buckets in (
        ("rest_client_request_duration_seconds", LATENCY_BUCKETS),
        ("rest_client_rate_limiter_duration_seconds", LATENCY_BUCKETS),
        ("rest_client_request_size_bytes", SIZE_BUCKETS),
        ("rest_client_response_size_bytes", SIZE_BUCKETS),
    ):
        sample = one(histogram, verb="GET")[0]
        les = [
            float(s.labels["le"])
            for s in one(histogram, verb="GET", host=sample.labels["host"])
            if "le" in s.labels
        ]
        assert les == [float(b) for b in buckets], histogram


def test_openmetrics_when_asked(scraped: tuple[OperatorProcess, str]) -> None:
    operator, _ = scraped
    reply = _scrape(operator, "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
    assert reply.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert reply.text.rstrip().endswith("# EOF")
    assert "# TYPE kuberay_cluster_info gauge" in reply.text


def test_operator_dashboard_names_only_exported_metrics(scraped: tuple[OperatorProcess, str]) -> None:
    operator, _ = scraped
    exported: set[str] = set()
    for family in text_string_to_metric_families(_scrape(operator).text):
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}.get(family.type, [""])
        exported |= {family.name + suffix for suffix in suffixes}
    path = next(p for p in promql.DASHBOARDS if p.name == "KubeRay-Operator.json")
    for where, expression in promql.dashboard_expressions(path):
        assert promql.metric_names(promql.parse(expression)) <= exported | KUBE_STATE_METRICS, where
