"""helm-chart/kuberay-apiserver and helm-chart/ray-cluster rendered by the real Helm: every object validates
(the RayCluster against our CRD and the operator's validation) and the values reach the objects."""

from __future__ import annotations

from typing import Any

import yaml

from install.rendered import find, kinds, validate_all
from kuberay.apiserver import main as apiserver
from support.helm import CHARTS, Helm

# Upstream v1.7.0's helm-chart/kuberay-apiserver/values.yaml `security` (as facts): the security proxy is
# on by default, its token left for the user to give.
UPSTREAM_SECURITY = {
    "proxy": {"repository": "quay.io/kuberay/security-proxy", "tag": "nightly", "pullPolicy": "IfNotPresent"},
    "env": {"HTTP_LOCAL_PORT": 8988, "GRPC_LOCAL_PORT": 8987, "SECURITY_PREFIX": "/", "ENABLE_GRPC": "true"},
}


def test_apiserver_defaults(helm: Helm) -> None:
    objects = helm.template("kuberay-apiserver", release="kuberay-apiserver")
    validate_all(objects)
    defaults = yaml.safe_load((CHARTS / "kuberay-apiserver" / "values.yaml").read_text())
    assert defaults["security"] == UPSTREAM_SECURITY
    deployment = find(objects, "Deployment", "kuberay-apiserver")
    main, proxy = deployment["spec"]["template"]["spec"]["containers"]
    assert main["name"] == "kuberay-apiserver-container"
    assert (main["command"], main["args"]) == (["kuberay-apiserver"], ["--enable-api-server-v2=true"])
    assert [p["containerPort"] for p in main["ports"]] == [8888, 8887]
    # Upstream's proxy beside it: its image, its ports, its environment with the APIServer's ports added.
    assert (proxy["name"], proxy["image"], proxy["imagePullPolicy"]) == (
        "security-proxy-container", "quay.io/kuberay/security-proxy:nightly", "IfNotPresent"
    )  # fmt: skip
    assert [(p["name"], p["containerPort"]) for p in proxy["ports"]] == [("http", 8988), ("grpc", 8987)]
    assert proxy["env"] == [
        {"name": "ENABLE_GRPC", "value": "true"}, {"name": "GRPC_LOCAL_PORT", "value": "8987"},
        {"name": "HTTP_LOCAL_PORT", "value": "8988"}, {"name": "SECURITY_PREFIX", "value": "/"},
        {"name": "HTTP_REMOTE_PORT", "value": "8888"}, {"name": "GRPC_REMOTE_PORT", "value": "8887"},
    ]  # fmt: skip
    assert proxy["resources"] == main["resources"]
    service = find(objects, "Service", "kuberay-apiserver-service")
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("http", 8888, 8988), ("rpc", 8887, 8987)
    ]  # fmt: skip
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert {("ClusterRole", "kuberay-apiserver"), ("ClusterRoleBinding", "kuberay-apiserver"),
            ("ClusterRole", "kuberay-apiserver-service-access"),
            ("ServiceAccount", "kuberay-apiserver")} <= kinds(objects)  # fmt: skip


def test_apiserver_without_the_security_proxy(helm: Helm) -> None:
    # Upstream's way to run without it: remove the section (null deletes a default key in Helm).
    objects = helm.template("kuberay-apiserver", {"security": None}, release="kuberay-apiserver")
    validate_all(objects)
    (main,) = find(objects, "Deployment", "kuberay-apiserver")["spec"]["template"]["spec"]["containers"]
    assert main["name"] == "kuberay-apiserver-container"
    service = find(objects, "Service", "kuberay-apiserver-service")
    assert [(p["name"], p["targetPort"]) for p in service["spec"]["ports"]] == [("http", 8888), ("rpc", 8887)]


def test_apiserver_security_proxy_and_scope(helm: Helm) -> None:
    values: dict[str, Any] = {
        "security": {
            "proxy": {"repository": "quay.io/kuberay/security-proxy", "tag": "nightly"},
            "env": {"HTTP_LOCAL_PORT": 8988, "GRPC_LOCAL_PORT": 8987, "SECURITY_TOKEN": "t0ken"},
        },
        "singleNamespaceInstall": True,
        "enableAPIServerV2": False,
        "cors": {"allowOrigin": "*"},
        "ingress": {"enabled": True, "hosts": [{"host": "api.example", "paths": [{"path": "/"}]}]},
    }
    objects = helm.template("kuberay-apiserver", values, release="kuberay-apiserver", namespace="ray")
    validate_all(objects)
    main, proxy = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert main["args"] == ["--enable-api-server-v2=false", "--cors-allow-origin=*"]
    parsed = apiserver.parser().parse_args(main["args"])
    assert (parsed.enable_api_server_v2, parsed.cors_allow_origin) == (False, "*")
    assert proxy["name"] == "security-proxy-container"
    env = {e["name"]: e["value"] for e in proxy["env"]}
    assert env["SECURITY_TOKEN"] == "t0ken" and (env["HTTP_REMOTE_PORT"], env["GRPC_REMOTE_PORT"]) == (
        "8888",
        "8887",
    )
    ports = find(objects, "Service")["spec"]["ports"]
    assert [p["targetPort"] for p in ports] == [8988, 8987]
    assert not [o for o in objects if o["kind"].startswith("Cluster")]
    assert find(objects, "Role")["metadata"]["namespace"] == "ray"
    backend = find(objects, "Ingress")["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "kuberay-apiserver-service", "port": {"number": 8888}}


def test_ray_cluster_defaults(helm: Helm) -> None:
    objects = helm.template("ray-cluster", release="demo", namespace="default")
    validate_all(objects)
    (cluster,) = objects
    assert (cluster["kind"], cluster["metadata"]["name"]) == ("RayCluster", "demo-kuberay")
    head = cluster["spec"]["headGroupSpec"]
    assert head["serviceType"] == "ClusterIP"
    (head_container,) = head["template"]["spec"]["containers"]
    assert (head_container["name"], head_container["image"]) == ("ray-head", "rayproject/ray:2.52.0")
    assert head_container["resources"]["limits"] == {"cpu": "1", "memory": "5Gi"}
    (group,) = cluster["spec"]["workerGroupSpecs"]
    assert (group["groupName"], group["replicas"], group["minReplicas"], group["maxReplicas"], group["numOfHosts"]) == (
        "workergroup", 1, 1, 5, 1
    )  # fmt: skip
    assert group["template"]["spec"]["containers"][0]["name"] == "ray-worker"
    labels = cluster["metadata"]["labels"]
    assert labels["app.kubernetes.io/instance"] == "demo" and labels["helm.sh/chart"] == "ray-cluster-1.1.0"
    assert head["template"]["metadata"]["labels"] == labels


def test_ray_cluster_values(helm: Helm) -> None:
    values: dict[str, Any] = {
        "head": {"rayStartParams": {"num-cpus": 0, "dashboard-host": "0.0.0.0"}, "initArgs": {"block": True},
                 "enableInTreeAutoscaling": True, "rayVersion": "2.52.0",
                 "containerEnv": [{"name": "HEAD_ONLY", "value": "1"}]},
        "common": {"containerEnv": [{"name": "COMMON", "value": "1"}]},
        "worker": {"disabled": True},
        "additionalWorkerGroups": {"gpu": {"replicas": 2, "maxReplicas": 4, "numOfHosts": 2,
                                           "rayStartParams": {"num-gpus": 1}}},
        "gcsFaultTolerance": {"enabled": True, "redisAddress": "redis:6379",
                              "redisPassword": {"value": "5241590000000000"}},
    }  # fmt: skip
    (cluster,) = helm.template("ray-cluster", values, release="my-kuberay", namespace="default")
    validate_all([cluster])
    assert cluster["metadata"]["name"] == "my-kuberay"
    spec = cluster["spec"]
    assert spec["enableInTreeAutoscaling"] is True and spec["rayVersion"] == "2.52.0"
    head = spec["headGroupSpec"]
    assert head["rayStartParams"] == {"num-cpus": "0", "dashboard-host": "0.0.0.0", "block": "true"}
    env = head["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["COMMON", "HEAD_ONLY"]
    (group,) = spec["workerGroupSpecs"]
    assert (group["groupName"], group["replicas"], group["minReplicas"], group["maxReplicas"]) == (
        "gpu",
        2,
        0,
        4,
    )
    assert group["numOfHosts"] == 2 and group["rayStartParams"] == {"num-gpus": "1"}
    assert group["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1Gi",
    }
    assert spec["gcsFaultToleranceOptions"] == {
        "redisAddress": "redis:6379",
        "redisPassword": {"value": "5241590000000000"},
    }
