"""The monitor objects (deploy/prometheus) and Grafana dashboards (deploy/grafana): well-formed, with
upstream's names, and every PromQL expression parses. That the operator's dashboard names only metrics the
operator exports is checked against a running operator in tests/integration/operator/test_metrics.py."""

from __future__ import annotations

import json

import prometheus_client
import pytest
import yaml
from prometheus_client import CollectorRegistry

from kuberay.apiserver.dispatch import ServerMetrics
from support import promql


def test_every_expression_parses() -> None:
    expressions = [e for path in promql.DASHBOARDS for e in promql.dashboard_expressions(path)]
    expressions += list(promql.rule_expressions())
    assert len(expressions) > 20
    for where, expression in expressions:
        assert promql.metric_names(promql.parse(expression)), where
    with pytest.raises(ValueError):
        promql.parse("sum(rate(workqueue_depth[5m])")


def test_dashboards_have_upstreams_titles_and_uids() -> None:
    found = {path.name: json.loads(path.read_text()) for path in promql.DASHBOARDS}
    assert {name: (d["title"], d["uid"]) for name, d in found.items()} == {
        "KubeRay-Operator.json": ("KubeRay Operator", "kuberay_operator"),
        "KubeRay-ApiServer-1650105351221.json": ("KubeRay-ApiServer", "gn38yKZnk"),
    }
    operator_variables = [v["name"] for v in found["KubeRay-Operator.json"]["templating"]["list"]]
    assert operator_variables == [
        "datasource",
        "namespace",
        "ControllerNamespace",
        "Controller",
        "ControllerPod",
    ]
    for dashboard in found.values():
        ids = [p["id"] for p in dashboard["panels"]]
        assert len(ids) == len(set(ids))


def test_apiserver_dashboard_names_only_apiserver_metrics() -> None:
    # The APIServer's own families (kuberay.apiserver's gRPC server metrics), the process collectors of
    # prometheus_client's default registry it serves beside them, and Prometheus's own `up`.
    registry = CollectorRegistry()
    ServerMetrics(registry)
    known = {"up"} | _sample_names(registry) | _sample_names(prometheus_client.REGISTRY)
    path = next(p for p in promql.DASHBOARDS if p.name.startswith("KubeRay-ApiServer"))
    for where, expression in promql.dashboard_expressions(path):
        assert promql.metric_names(promql.parse(expression)) <= known, where


def _sample_names(registry: CollectorRegistry) -> set[str]:
    """Every sample name a registry's families can have, observed or not."""
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}
    return {
        family.name + suffix for family in registry.collect() for suffix in suffixes.get(family.type, [""])
    } | {sample.name for family in registry.collect() for sample in family.samples}


def test_monitor_objects() -> None:
    objects = [o for path in promql.MONITORS for o in yaml.safe_load_all(path.read_text()) if o]
    by_name = {o["metadata"]["name"]: o for o in objects}
    assert {(o["kind"], o["metadata"]["name"]) for o in objects} == {
        ("PodMonitor", "ray-workers-monitor"),
        ("PodMonitor", "ray-head-monitor"),
        ("PodMonitor", "kuberay-cluster"),
        ("ServiceMonitor", "kuberay-operator"),
        ("ServiceMonitor", "kuberay-apiserver"),
        ("PrometheusRule", "ray-cluster-gcs-rules"),
    }
    for o in objects:
        assert o["apiVersion"] == "monitoring.coreos.com/v1"
        assert (o["metadata"]["namespace"], o["metadata"]["labels"]) == (
            "prometheus-system",
            {"release": "prometheus"},
        )
    head = by_name["ray-head-monitor"]["spec"]
    assert [e["port"] for e in head["podMetricsEndpoints"]] == ["metrics", "as-metrics", "dash-metrics"]
    assert all(
        e["relabelings"][0]["targetLabel"] == "ray_io_cluster"
        and e["relabelings"][0]["sourceLabels"] == ["__meta_kubernetes_pod_label_ray_io_cluster"]
        for e in head["podMetricsEndpoints"]
    )
    group = by_name["ray-cluster-gcs-rules"]["spec"]["groups"][0]
    assert (group["name"], group["interval"]) == ("ray-cluster-main-staging-gcs.rules", "30s")
    alert = group["rules"][1]
    assert (alert["alert"], alert["for"], alert["labels"]) == (
        "MissingMetricRayGlobalControlStore",
        "5m",
        {"severity": "critical"},
    )
