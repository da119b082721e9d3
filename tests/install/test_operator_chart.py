"""helm-chart/kuberay-operator rendered by the real Helm with several value sets: every object validates,
and the values reach the objects: the operator's arguments (parsed by the operator's own flag parser),
its configuration file, the RBAC scope and rules, the ServiceMonitor."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from install.rendered import find, kinds, load_all, validate_all
from kuberay.api.config import Configuration
from kuberay.api.features import Feature
from kuberay.operator import settings
from support.helm import CHARTS, Helm

REPO = Path(__file__).resolve().parents[2]
CHART = "kuberay-operator"
OWN_RULES = yaml.safe_load((REPO / "deploy" / "rbac" / "role.yaml").read_text())["rules"]
USER_ROLES = {
    f"{kind}-{role}-role" for kind in ("rayjob", "rayservice", "raycronjob") for role in ("editor", "viewer")
}


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    assert len(pod["containers"]) == 1
    found: dict[str, Any] = pod["containers"][0]
    return found


def operator_settings(objects: list[dict[str, Any]]) -> settings.OperatorSettings:
    return settings.parse(container(objects)["args"], environ={})


@pytest.mark.parametrize("chart", ["kuberay-operator", "kuberay-apiserver", "ray-cluster"])
def test_lint(helm: Helm, chart: str) -> None:
    result = helm.run("lint", "--strict", str(CHARTS / chart))
    assert "0 chart(s) failed" in result.stdout


def test_defaults(helm: Helm) -> None:
    objects = helm.template(CHART, include_crds=True)
    validate_all(objects)
    assert {
        ("Deployment", "kuberay-operator"), ("Service", "kuberay-operator"), ("ServiceAccount", "kuberay-operator"),
        ("ClusterRole", "kuberay-operator"), ("ClusterRoleBinding", "kuberay-operator"),
        ("Role", "kuberay-operator-leader-election"), ("RoleBinding", "kuberay-operator-leader-election"),
    } | {("ClusterRole", name) for name in USER_ROLES} <= kinds(objects)  # fmt: skip
    crds = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    assert crds == {f"{plural}.ray.io" for plural in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")}
    main = container(objects)
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert main["command"] == ["kuberay-operator"] and "kuberay-operator" in scripts
    parsed = operator_settings(objects)
    assert parsed.config.enable_leader_election and parsed.config.enable_metrics
    assert (parsed.config.reconcile_concurrency, parsed.config.qps, parsed.config.burst) == (1, 100.0, 200)
    assert parsed.config.watch_namespace == "" and parsed.config.log_stdout_encoder == "json"
    assert parsed.feature_gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert not parsed.feature_gates.enabled(Feature.RAY_CRON_JOB)
    # The pod's port `http` is what the probes and the Service name; the operator serves metrics on 8080.
    assert main["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert parsed.config.metrics_addr.endswith(":8080")
    assert find(objects, "Service")["spec"]["ports"][0]["targetPort"] == "http"
    assert find(objects, "ClusterRole", "kuberay-operator")["rules"] == OWN_RULES
    binding = find(objects, "ClusterRoleBinding", "kuberay-operator")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": "ray-system"}
    ]


def test_feature_gates_reach_the_operator_as_upstream_renders_them(helm: Helm) -> None:
    gates = [
        {"name": "RayCronJob", "enabled": True},
        {"name": "RayClusterStatusConditions", "enabled": False},
    ]
    objects = helm.template(CHART, {"featureGates": gates})
    args = container(objects)["args"]
    assert args[-1] == "--feature-gates=RayCronJob=true,RayClusterStatusConditions=false"
    parsed = operator_settings(objects)
    assert parsed.feature_gates.enabled(Feature.RAY_CRON_JOB)
    assert not parsed.feature_gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert not any(
        a.startswith("--feature-gates") for a in container(helm.template(CHART, {"featureGates": []}))["args"]
    )


def test_flags_follow_the_values(helm: Helm) -> None:
    values = {
        "leaderElectionEnabled": False, "metrics": {"enabled": False}, "reconcileConcurrency": 4,
        "kubeClient": {"qps": 50.5, "burst": 80}, "useKubernetesProxy": True,
        "logging": {"stdoutEncoder": "console", "baseDir": "/var/log/kuberay", "fileName": "operator.log",
                    "sizeLimit": "100Mi"},
        "batchScheduler": {"name": "yunikorn"},
        "env": [{"name": "ENABLE_PROBES_INJECTION", "value": "false"}],
    }  # fmt: skip
    objects = helm.template(CHART, values)
    validate_all(objects)
    parsed = operator_settings(objects)
    config = parsed.config
    assert not config.enable_leader_election and not config.enable_metrics and config.use_kubernetes_proxy
    assert (config.reconcile_concurrency, config.qps, config.burst) == (4, 50.5, 80)
    assert config.log_file == "/var/log/kuberay/operator.log" and config.log_stdout_encoder == "console"
    assert config.batch_scheduler == "yunikorn"
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "kuberay-logs", "emptyDir": {"sizeLimit": "100Mi"}}]
    assert container(objects)["volumeMounts"] == [{"name": "kuberay-logs", "mountPath": "/var/log/kuberay"}]
    assert container(objects)["env"] == values["env"]


def test_watch_namespaces_cluster_wide(helm: Helm) -> None:
    objects = helm.template(CHART, {"watchNamespace": ["team-a", "team-b"]})
    assert operator_settings(objects).config.watch_namespace == "team-a,team-b"
    assert ("ClusterRole", "kuberay-operator") in kinds(objects)


@pytest.mark.parametrize(
    ("values", "namespaces"),
    [({}, {"ray-system"}), ({"watchNamespace": ["team-a", "team-b"]}, {"team-a", "team-b"})],
)
def test_single_namespace_install(helm: Helm, values: dict[str, Any], namespaces: set[str]) -> None:
    objects = helm.template(CHART, {"singleNamespaceInstall": True, **values})
    validate_all(objects)
    assert not [o for o in objects if o["kind"].startswith("Cluster")]
    roles = [o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == "kuberay-operator"]
    assert {r["metadata"]["namespace"] for r in roles} == namespaces
    assert all(r["rules"] == OWN_RULES for r in roles)
    bindings = [
        o for o in objects if o["kind"] == "RoleBinding" and o["metadata"]["name"] == "kuberay-operator"
    ]
    assert {b["metadata"]["namespace"] for b in bindings} == namespaces
    assert all(b["subjects"][0]["namespace"] == "ray-system" for b in bindings)
    assert operator_settings(objects).config.watch_namespace == ",".join(sorted(namespaces))
    without = helm.template(
        CHART, {"singleNamespaceInstall": True, "crNamespacedRbacEnable": False, **values}
    )
    assert kinds(without) & {("Role", "kuberay-operator"), ("RoleBinding", "kuberay-operator")} == set()
    assert ("Role", "kuberay-operator-leader-election") in kinds(without)


def test_rbac_disabled(helm: Helm) -> None:
    objects = helm.template(CHART, {"rbacEnable": False})
    assert not [o for o in objects if o["apiVersion"].startswith("rbac.authorization.k8s.io/")]


@pytest.mark.parametrize(
    ("scheduler", "group"),
    [({"name": "volcano"}, "scheduling.volcano.sh"), ({"enabled": True}, "scheduling.volcano.sh"),
     ({"name": "scheduler-plugins"}, "scheduling.x-k8s.io")],
)  # fmt: skip
def test_batch_scheduler_rules_and_flags(helm: Helm, scheduler: dict[str, Any], group: str) -> None:
    objects = helm.template(CHART, {"batchScheduler": scheduler})
    rules = find(objects, "ClusterRole", "kuberay-operator")["rules"]
    assert rules == OWN_RULES and ["podgroups"] in [
        r["resources"] for r in rules if r["apiGroups"] == [group]
    ]
    config = operator_settings(objects).config
    assert (config.enable_batch_scheduler, config.batch_scheduler) == (
        scheduler.get("enabled", False), scheduler.get("name", ""),
    )  # fmt: skip


def test_configuration_file(helm: Helm) -> None:
    values = {
        "configuration": {
            "enabled": True,
            "defaultContainerEnvs": [{"name": "RAY_enable_open_telemetry", "value": "true"}],
            "defaultPodLabels": {"team": "ml"},
            "headSidecarContainers": [{"name": "fluentbit", "image": "fluent/fluent-bit:1.9"}],
        },
        "watchNamespace": ["team-a"],
        "reconcileConcurrency": 3,
        "batchScheduler": {"name": "volcano"},
        "featureGates": [{"name": "RayCronJob", "enabled": True}],
    }
    objects = helm.template(CHART, values)
    validate_all(objects)
    args = container(objects)["args"]
    assert args == ["--config", "/etc/kuberay/config.yaml", "--feature-gates=RayCronJob=true"]
    config_map = find(objects, "ConfigMap", "kuberay-operator-config")
    config = Configuration.from_yaml(config_map["data"]["config.yaml"])
    assert (config.watch_namespace, config.reconcile_concurrency, config.batch_scheduler) == (
        "team-a",
        3,
        "volcano",
    )
    assert (
        config.enable_leader_election and config.enable_metrics and (config.qps, config.burst) == (100.0, 200)
    )
    assert [e["name"] for e in config.default_container_envs] == ["RAY_enable_open_telemetry"]
    assert config.default_pod_labels == {"team": "ml"}
    assert [c["name"] for c in config.head_sidecar_containers] == ["fluentbit"]
    assert container(objects)["volumeMounts"] == [
        {"name": "operator-config", "mountPath": "/etc/kuberay", "readOnly": True}
    ]
    pod_annotations = find(objects, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    changed = helm.template(CHART, {**values, "reconcileConcurrency": 5})
    assert pod_annotations != find(changed, "Deployment")["spec"]["template"]["metadata"]["annotations"]


def test_upstream_v1_8_settings_reach_the_operator(helm: Helm) -> None:
    # configuration.allowedNodeLabels (kuberay#5260) and nodeEventForwarder.* (kuberay#4978), as flags
    # without the configuration file and as its fields with it.
    labels = ["topology.kubernetes.io/zone", "nvidia.com/gpu.clique"]
    lists = {"sources": ["kubelet"], "reasons": ["NodeNotReady", "Rebooted"], "types": ["Warning"]}
    values = {
        "configuration": {"allowedNodeLabels": labels},
        "nodeEventForwarder": {"enabled": True, **lists},
    }
    objects = helm.template(CHART, values)
    validate_all(objects)
    assert [a for a in container(objects)["args"] if a.startswith(("--allowed", "--node-event"))] == [
        "--allowed-node-labels=topology.kubernetes.io/zone,nvidia.com/gpu.clique",
        "--node-event-forwarder-reasons=NodeNotReady,Rebooted",
        "--node-event-forwarder-sources=kubelet",
        "--node-event-forwarder-types=Warning",
    ]
    flags = operator_settings(objects).config
    assert flags.allowed_node_labels == labels
    assert (
        flags.node_event_forwarder_sources,
        flags.node_event_forwarder_reasons,
        flags.node_event_forwarder_types,
    ) == (lists["sources"], lists["reasons"], lists["types"])

    filed = helm.template(CHART, {**values, "configuration": {"enabled": True, "allowedNodeLabels": labels}})
    config = Configuration.from_yaml(
        find(filed, "ConfigMap", "kuberay-operator-config")["data"]["config.yaml"]
    )
    assert container(filed)["args"][:2] == ["--config", "/etc/kuberay/config.yaml"]
    assert config.allowed_node_labels == labels
    assert (
        config.node_event_forwarder_sources,
        config.node_event_forwarder_reasons,
        config.node_event_forwarder_types,
    ) == (lists["sources"], lists["reasons"], lists["types"])

    # The lists wait for nodeEventForwarder.enabled; nothing is passed by default.
    for quiet in ({"nodeEventForwarder": lists}, {}):
        args = container(helm.template(CHART, quiet))["args"]
        assert not [a for a in args if a.startswith(("--allowed", "--node-event"))]
    quiet_file = helm.template(CHART, {"configuration": {"enabled": True}, "nodeEventForwarder": lists})
    text = find(quiet_file, "ConfigMap", "kuberay-operator-config")["data"]["config.yaml"]
    assert "nodeEventForwarder" not in text and "allowedNodeLabels" not in text


def test_service_monitor(helm: Helm) -> None:
    assert not [o for o in helm.template(CHART) if o["kind"] == "ServiceMonitor"]
    values = {"metrics": {"serviceMonitor": {"enabled": True, "namespace": "monitoring", "interval": "15s",
                                             "honorLabels": True, "additionalLabels": {"release": "prometheus"}}}}  # fmt: skip
    monitor = find(helm.template(CHART, values), "ServiceMonitor", "kuberay-operator")
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["metadata"]["labels"] == {"release": "prometheus"}
    assert monitor["spec"] == {
        "endpoints": [{"path": "/metrics", "targetPort": "http", "interval": "15s", "honorLabels": True}],
        "namespaceSelector": {"matchNames": ["ray-system"]},
        "selector": {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator"}},
    }


def test_names_follow_the_release_without_overrides(helm: Helm) -> None:
    objects = helm.template(CHART, {"fullnameOverride": "", "nameOverride": ""}, release="ops")
    assert ("Deployment", "ops-kuberay-operator") in kinds(objects)
    selector = find(objects, "Deployment")["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "ops"}


@pytest.mark.parametrize(
    ("values", "message"),
    [({"reconcileConcurrency": 0}, "values.reconcileConcurrency must be a positive integer"),
     ({"kubeClient": {"qps": "fast"}}, "values.kubeClient.qps must be a valid float number"),
     ({"kubeClient": {"burst": -1}}, "values.kubeClient.burst must be a non-negative integer")],
)  # fmt: skip
def test_invalid_values_are_refused(helm: Helm, values: dict[str, Any], message: str) -> None:
    assert message in helm.render_error(CHART, values)


def test_packaged_chart_carries_what_its_links_point_to(helm: Helm, tmp_path: Path) -> None:
    """crds/ and files/ link to deploy/; `helm package` must put their contents in the archive."""
    helm.run("package", str(CHARTS / CHART), "--destination", str(tmp_path))
    (archive,) = tmp_path.glob("kuberay-operator-*.tgz")
    rendered = helm.run(
        "template", "kuberay-operator", str(archive), "--include-crds", "-n", "ray-system"
    ).stdout
    objects = load_all(rendered)
    assert len([o for o in objects if o["kind"] == "CustomResourceDefinition"]) == 4
    assert find(objects, "ClusterRole", "kuberay-operator")["rules"] == OWN_RULES
