import re

import pytest

from kuberay.api.config import ConfigError, Configuration
from kuberay.api.features import FeatureGates


def test_empty_file_gives_upstream_defaults() -> None:
    config = Configuration.from_yaml("")
    assert (config.metrics_addr, config.probe_addr) == (":8080", ":8082")
    assert (config.qps, config.burst, config.reconcile_concurrency) == (100.0, 200, 1)
    assert config.enable_leader_election is True
    assert config.batch_scheduler == "" and config.default_pod_labels == {}


def test_fields_are_read_and_zero_values_defaulted_like_upstream() -> None:
    config = Configuration.from_yaml(
        """
apiVersion: config.ray.io/v1alpha1
kind: Configuration
metricsAddr: ""
reconcileConcurrency: 0
qps: 50
enableLeaderElection: false
watchNamespace: a,b
headSidecarContainers: [{name: fluentbit, image: fluent/fluent-bit}]
defaultPodLabels: {team: ray}
"""
    )
    assert config.metrics_addr == ":8080" and config.reconcile_concurrency == 1
    assert config.qps == 50.0 and config.enable_leader_election is False
    assert config.watch_namespace == "a,b" and config.default_pod_labels == {"team": "ray"}
    assert config.head_sidecar_containers[0]["name"] == "fluentbit"


def test_upstream_v1_8_settings_are_read() -> None:
    config = Configuration.from_yaml(
        """
allowedNodeLabels: [topology.kubernetes.io/zone, nvidia.com/gpu.clique]
nodeEventForwarderSources: [kubelet]
nodeEventForwarderReasons: [NodeNotReady, Rebooted]
nodeEventForwarderTypes: [Warning]
"""
    )
    assert config.allowed_node_labels == ["topology.kubernetes.io/zone", "nvidia.com/gpu.clique"]
    assert config.node_event_forwarder_sources == ["kubelet"]
    assert config.node_event_forwarder_reasons == ["NodeNotReady", "Rebooted"]
    assert config.node_event_forwarder_types == ["Warning"]
    assert Configuration.from_yaml("").allowed_node_labels == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("reconcileConcurency: 2", "reconcileConcurency: unknown field"),
        ("reconcileConcurrency: true", "reconcileConcurrency:"),
        ("burst: '10'", "burst:"),
        ("kind: RayCluster", "kind:"),
        ("apiVersion: config.ray.io/v1", "apiVersion:"),
        ("logStdoutEncoder: text", "invalid encoder \"text\" (must be 'json' or 'console')"),
        ("[1, 2]", "must be a mapping"),
        ("allowedNodeLabels: [a/b/c]", "allowedNodeLabels: Value error, invalid node label key 'a/b/c'"),
        ("allowedNodeLabels: topology.kubernetes.io/zone", "allowedNodeLabels: Input should be a valid list"),
        ("nodeEventForwarderTypes: ['']", "nodeEventForwarderTypes: Value error, items must be non-empty"),
        (
            "nodeEventForwarderReasons: ['A,B']",
            "nodeEventForwarderReasons: Value error, items must be non-empty",
        ),
        ("a: [", "not valid YAML"),
    ],
)
def test_bad_config_is_refused_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        Configuration.from_yaml(text)


@pytest.mark.parametrize(
    ("fields", "gates", "message"),
    [
        ({"batchScheduler": "slurm"}, "", "scheduler is not supported, name=slurm"),
        ({"batchScheduler": "volcano", "enableBatchScheduler": True}, "", "both feature flags"),
        (
            {"enableBatchScheduler": True},
            "KubernetesWAS=true",
            "the KubernetesWAS feature gate cannot be combined",
        ),
    ],
)
def test_batch_scheduler_settings_are_checked(fields: dict[str, object], gates: str, message: str) -> None:
    config = Configuration.parse(fields)
    with pytest.raises(ConfigError, match=message):
        config.validate_batch_scheduler(FeatureGates.parse(gates))


@pytest.mark.parametrize("name", ["volcano", "yunikorn", "scheduler-plugins", "kai-scheduler"])
def test_known_batch_schedulers_pass(name: str) -> None:
    Configuration(batch_scheduler=name).validate_batch_scheduler(FeatureGates())
