"""The dashboard address of a RayCluster's head Service."""

from kuberay.controllers.dashboards import dashboard_address


def test_dashboard_address_is_the_head_service_dns_name_and_dashboard_port() -> None:
    svc = {"metadata": {"name": "c-head-svc", "namespace": "ns"},
           "spec": {"ports": [{"name": "client", "port": 10001}, {"name": "dashboard", "port": 9999}]}}  # fmt: skip
    assert dashboard_address(svc, "cluster.local") == "c-head-svc.ns.svc.cluster.local:9999"
    assert dashboard_address({**svc, "spec": {"ports": []}}, "cluster.local") is None
    assert dashboard_address(None, "cluster.local") is None
