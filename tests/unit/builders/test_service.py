from pathlib import Path
from typing import Any

import pytest

from kuberay.api.features import FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from kuberay.builders import service
from support import golden

CASES = golden.cases(Path(__file__).parent / "testdata" / "service")


def build_all(case: dict[str, Any]) -> dict[str, Any]:
    cluster = RayCluster.parse(case["cluster"])
    cluster_ip = (case.get("options") or {}).get("clusterIPService", False)
    out: dict[str, Any] = {"headService": service.build_head_service(cluster, cluster_ip_service=cluster_ip)}
    if cluster.annotations.get("ray.io/enable-serve-service") == "true":
        try:
            out["serveService"] = service.build_serve_service(cluster)
        except service.ServiceBuildError as error:
            out["serveService"] = {"error": str(error)}
    if service.needs_headless_service(cluster):
        out["headlessService"] = service.build_headless_service(cluster)
    owner_raw = case.get("owner")
    if owner_raw is not None:
        owner = RayJob.parse(owner_raw) if owner_raw["kind"] == "RayJob" else RayService.parse(owner_raw)
        out["ownerHeadService"] = service.build_head_service_for_owner(owner, cluster)
        if isinstance(owner, RayService):
            out["ownerServeService"] = service.build_rayservice_serve_service(owner, cluster, FeatureGates())
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), build_all(golden.load(case)))


def load(name: str) -> dict[str, Any]:
    return build_all(golden.load(Path(__file__).parent / "testdata" / "service" / f"{name}.input.yaml"))


def ports(svc: dict[str, Any]) -> list[tuple[str, int]]:
    return [(p["name"], p["port"]) for p in svc["spec"]["ports"]]


def test_default_head_service_is_headless_with_sorted_default_ports() -> None:
    head = load("default-ports")["headService"]
    assert head["metadata"]["name"] == "raycluster-sample-head-svc"
    assert head["spec"]["clusterIP"] == "None" and head["spec"]["publishNotReadyAddresses"] is True
    assert "type" not in head["spec"]
    assert ports(head) == [
        ("client", 10001),
        ("dashboard", 8265),
        ("gcs-server", 6379),
        ("metrics", 8080),
        ("serve", 8000),
    ]
    assert {p["appProtocol"] for p in head["spec"]["ports"]} == {"tcp"}
    assert head["spec"]["selector"] == {
        "ray.io/cluster": "raycluster-sample",
        "ray.io/node-type": "head",
        "ray.io/identifier": "raycluster-sample-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert head["metadata"]["labels"] == head["spec"]["selector"]
    owner = head["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "RayCluster",
        "raycluster-sample",
        True,
        True,
    )


def test_container_ports_unnamed_metrics_and_serve_prefix() -> None:
    out = load("container-ports")
    head = out["headService"]
    assert dict(ports(head)) == {
        "gcs-server": 6380,
        "dashboard": 9265,
        "12345-port": 12345,
        "serve": 8000,
        "serve-grpc": 9000,
        "served": 9001,
        "metrics": 8080,
    }
    assert head["metadata"]["annotations"] == {"team": "serving"}
    assert head["spec"]["selector"]["app.kubernetes.io/name"] == "my-ray"
    assert "other" not in head["spec"]["selector"]
    serve = out["serveService"]
    assert serve["metadata"]["name"] == "ports-serve-svc"
    assert serve["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "ports",
        "ray.io/originated-from-crd": "RayCluster",
        "ray.io/serve": "ports-serve",
    }
    assert serve["spec"] == {
        "ports": [{"name": "serve", "port": 8000}, {"name": "serve-grpc", "port": 9000}],
        "selector": {"ray.io/cluster": "ports"},
    }


def test_custom_head_service_keeps_user_fields() -> None:
    head = load("custom-head-service")["headService"]
    meta, spec = head["metadata"], head["spec"]
    assert (meta["name"], meta["namespace"], spec["type"]) == ("my-head", "ray", "LoadBalancer")
    assert meta["annotations"] == {"shared": "from-headServiceAnnotations", "only-mine": "kept"}
    assert meta["labels"]["ray.io/cluster"] == "custom" and meta["labels"]["mine"] == "yes"
    assert spec["selector"]["ray.io/cluster"] == "custom" and "app" not in spec["selector"]
    assert ports(head)[0] == ("custom-dashboard", 80) and spec["ports"][0]["targetPort"] == 8265
    assert ports(head)[1:] == [("dashboard", 8265), ("metrics", 8080)]
    assert "clusterIP" not in spec


def test_custom_head_service_defaults_name_and_type() -> None:
    head = load("custom-head-service-defaults")["headService"]
    assert head["metadata"]["name"] == "custom-defaults-head-svc"
    assert head["spec"]["type"] == "NodePort"


@pytest.mark.parametrize(("case", "kind"), [("nodeport", "NodePort"), ("loadbalancer", "LoadBalancer")])
def test_non_cluster_ip_types_keep_cluster_ip(case: str, kind: str) -> None:
    out = load(case)
    assert out["headService"]["spec"]["type"] == kind
    assert "clusterIP" not in out["headService"]["spec"]
    if "serveService" in out:
        assert out["serveService"]["spec"]["type"] == kind


def test_cluster_ip_option() -> None:
    spec = load("cluster-ip-option")["headService"]["spec"]
    assert spec["type"] == "ClusterIP" and "clusterIP" not in spec and "publishNotReadyAddresses" not in spec


def test_headless_worker_service() -> None:
    out = load("multihost")
    assert out["headlessService"]["metadata"]["name"] == "tpu-headless"
    assert out["headlessService"]["metadata"]["labels"] == {"ray.io/headless-worker-svc": "tpu"}
    assert out["headlessService"]["spec"] == {
        "selector": {"ray.io/cluster": "tpu", "ray.io/node-type": "worker"},
        "clusterIP": "None",
        "type": "ClusterIP",
        "publishNotReadyAddresses": True,
    }
    assert "headlessService" not in load("default-ports")


def test_no_serve_port_is_an_error() -> None:
    assert load("no-serve-port")["serveService"] == {"error": service.NO_SERVE_PORT_MESSAGE}


def test_rayjob_owned_head_service() -> None:
    svc = load("rayjob-owner")["ownerHeadService"]
    assert svc["metadata"]["name"] == "rayjob-sample-head-svc"
    assert svc["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/node-type": "head",
        "ray.io/identifier": "rayjob-sample-head",
    }
    assert "annotations" not in svc["metadata"]
    assert svc["spec"]["selector"]["ray.io/cluster"] == "rayjob-sample-x7k2p"
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "RayJob"


def test_rayservice_serve_service_merges_user_ports() -> None:
    out = load("rayservice")
    serve = out["ownerServeService"]
    assert serve["metadata"]["name"] == "rayservice-sample-serve-svc"
    assert serve["metadata"]["labels"] == {
        "custom": "label",
        "ray.io/originated-from-cr-name": "rayservice-sample",
        "ray.io/originated-from-crd": "RayService",
        "ray.io/serve": "rayservice-sample-serve",
    }
    assert serve["spec"]["selector"] == {"ray.io/cluster": "rayservice-sample-q8vzt", "ray.io/serve": "true"}
    assert serve["spec"]["ports"] == [
        {"name": "serve", "port": 8000, "appProtocol": "kubernetes.io/h2c"},
        {"name": "serve-grpc", "port": 9000},
    ]
    assert serve["spec"]["type"] == "ClusterIP"
    assert out["ownerHeadService"]["metadata"]["name"] == "rayservice-sample-head-svc"


def test_rayservice_incremental_upgrade_names_by_cluster() -> None:
    serve = load("rayservice-incremental")["ownerServeService"]
    assert serve["metadata"]["name"] == "svc-b7d2m-serve-svc"
    assert serve["metadata"]["labels"]["ray.io/serve"] == "svc-b7d2m-serve"
    assert serve["spec"]["ports"] == [{"name": "serve", "port": 8000}]


def test_rayservice_user_ports_kept_without_detected_ports() -> None:
    serve = load("rayservice-user-ports")["ownerServeService"]
    assert serve["metadata"]["name"] == "my-serve"
    assert serve["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": 8000}]
    assert serve["spec"]["type"] == "NodePort"


def test_a_head_without_containers_is_named() -> None:
    cluster = RayCluster.parse(
        {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"headGroupSpec": {"template": {}}}}
    )
    with pytest.raises(
        service.ServiceBuildError, match=r"ns/c: spec\.headGroupSpec\.template\.spec\.containers is empty"
    ):
        service.build_head_service(cluster)
