import pytest

from kuberay.rayclient.dashboard import DashboardError, JobSubmitRequest, dashboard_base_url, proxy_base_url


def test_dashboard_url_uses_the_port_named_dashboard() -> None:
    service = {
        "metadata": {"name": "test-cluster-head-svc", "namespace": "ray"},
        "spec": {"ports": [{"name": "gcs-server", "port": 6379}, {"name": "dashboard", "port": 9999}]},
    }
    assert dashboard_base_url(service) == "http://test-cluster-head-svc.ray.svc.cluster.local:9999"
    assert dashboard_base_url(service, "corp.local").endswith(".svc.corp.local:9999")
    with pytest.raises(DashboardError, match="dashboard port is not found"):
        dashboard_base_url({"metadata": {}, "spec": {"ports": [{"name": "gcs-server", "port": 6379}]}})


def test_proxy_url() -> None:
    assert proxy_base_url("https://127.0.0.1:6443/", "ray", "c-head-svc") == (
        "https://127.0.0.1:6443/api/v1/namespaces/ray/services/c-head-svc:dashboard/proxy"
    )


def test_submit_body_keeps_upstreams_field_order_and_omits_empty_fields() -> None:
    body = JobSubmitRequest(
        entrypoint="python x.py", submission_id="id1", metadata={"a": "b"}, entrypoint_num_cpus=1.5
    )
    assert list(body.to_json().items()) == [
        ("metadata", {"a": "b"}),
        ("entrypoint", "python x.py"),
        ("submission_id", "id1"),
        ("entrypoint_num_cpus", 1.5),
    ]
    assert JobSubmitRequest(entrypoint="").to_json() == {"entrypoint": ""}
