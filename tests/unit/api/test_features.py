import pytest

from kuberay.api.features import Feature, FeatureGateError, FeatureGates


def test_defaults_follow_upstream() -> None:
    gates = FeatureGates()
    assert gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert gates.enabled(Feature.RAY_MULTI_HOST_INDEXING)
    assert not gates.enabled(Feature.RAY_CRON_JOB)
    assert not gates.enabled(Feature.RAY_CLUSTER_NETWORK_POLICY)


def test_parse_overrides_only_named_gates() -> None:
    gates = FeatureGates.parse(" RayCronJob=true, RayClusterStatusConditions=False ")
    assert gates.enabled(Feature.RAY_CRON_JOB)
    assert not gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert gates.enabled(Feature.RAY_JOB_DELETION_POLICY)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        ("RayCronJob=yes", "invalid value of RayCronJob"),
    ],
)
def test_parse_refuses_unknown_names_and_bad_values(spec: str, fragment: str) -> None:
    with pytest.raises(FeatureGateError, match=fragment):
        FeatureGates.parse(spec)


def test_from_mapping() -> None:
    assert FeatureGates.from_mapping({"RayClusterMTLS": True}).enabled(Feature.RAY_CLUSTER_MTLS)


def test_the_environment_names_gates_in_upper_case_and_says_where_each_came_from() -> None:
    gates = FeatureGates.from_environment(
        {"KUBERAY_FEATURE_RAYSERVICEINCREMENTALUPGRADE": "false", "PATH": "/x"}
    )
    assert not gates.enabled(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE)
    assert (
        gates.source(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE)
        == "KUBERAY_FEATURE_RAYSERVICEINCREMENTALUPGRADE"
    )
    assert gates.source(Feature.RAY_CRON_JOB) == "default"
    overlaid = gates.overlaid(FeatureGates.parse("RayServiceIncrementalUpgrade=true"))
    assert overlaid.enabled(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE)
    assert overlaid.source(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE) == "--feature-gates"


@pytest.mark.parametrize(
    ("environ", "fragment"),
    [
        ({"KUBERAY_FEATURE_RayCronJob": "true"}, "KUBERAY_FEATURE_RayCronJob: unrecognized feature gate"),
        ({"KUBERAY_FEATURE_RAYCRONJOB": ""}, "KUBERAY_FEATURE_RAYCRONJOB='': expected true or false"),
        ({"KUBERAY_FEATURE_RAYCRONJOB": "1"}, "KUBERAY_FEATURE_RAYCRONJOB='1': expected true or false"),
    ],
)
def test_the_environment_refuses_unknown_gates_and_bad_values(environ: dict[str, str], fragment: str) -> None:
    with pytest.raises(FeatureGateError, match=fragment):
        FeatureGates.from_environment(environ)
