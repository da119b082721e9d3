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
