import pytest

from kuberay.api import features
from kuberay.api.features import (
    SPECS,
    Feature,
    FeatureGateError,
    FeatureGates,
    GateRequests,
    GateSpec,
    Stage,
)

ALPHA = [f for f, spec in SPECS.items() if spec.stage == Stage.ALPHA]
BETA = [f for f, spec in SPECS.items() if spec.stage == Stage.BETA]


def test_defaults_follow_upstream() -> None:
    gates = FeatureGates()
    assert gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert gates.enabled(Feature.RAY_MULTI_HOST_INDEXING)
    assert not gates.enabled(Feature.RAY_CRON_JOB)
    assert not gates.enabled(Feature.RAY_CLUSTER_NETWORK_POLICY)


def test_the_table_is_upstreams_with_v1_8s_new_gates() -> None:
    assert {f.value for f in BETA} == {
        "RayClusterStatusConditions",
        "RayJobDeletionPolicy",
        "RayMultiHostIndexing",
        "RayServiceIncrementalUpgrade",
    }
    assert SPECS[Feature.TOPOLOGY_LABEL_DELIVERY] == GateSpec(False, Stage.ALPHA)
    assert SPECS[Feature.GCS_FAULT_TOLERANCE_ACTIVE_PASSIVE_HEAD] == GateSpec(False, Stage.ALPHA)
    # Beta gates are on, alpha ones off, and nothing upstream has is locked.
    assert all(spec.default == (spec.stage == Stage.BETA) and not spec.locked for spec in SPECS.values())


def test_parse_overrides_only_named_gates() -> None:
    gates = FeatureGates.parse(" RayCronJob=true, RayClusterStatusConditions=False ")
    assert gates.enabled(Feature.RAY_CRON_JOB)
    assert not gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert gates.enabled(Feature.RAY_JOB_DELETION_POLICY)


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True"])
def test_every_spelling_go_reads_as_true(value: str) -> None:
    assert FeatureGates.parse(f"RayCronJob={value}").enabled(Feature.RAY_CRON_JOB)


@pytest.mark.parametrize("value", ["0", "f", "F", "FALSE", "false", "False"])
def test_every_spelling_go_reads_as_false(value: str) -> None:
    assert not FeatureGates.parse(f"RayClusterStatusConditions={value}").enabled(
        Feature.RAY_CLUSTER_STATUS_CONDITIONS
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        ("RayCronJob=yes", 'invalid value of RayCronJob=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
        ("RayCronJob=", 'invalid value of RayCronJob=, err: strconv.ParseBool: parsing "": invalid syntax'),
        ("RayCronJob=tRUE", 'invalid value of RayCronJob=tRUE, err: strconv.ParseBool: parsing "tRUE": invalid syntax'),
        ("RayCronJob", "missing bool value for RayCronJob"),
        ("RayCronJob=true, ", "missing bool value for "),
        ("=true", "unrecognized feature gate: "),
        # A bad value stops the reading before any name is looked at.
        ("NoSuchGate=true,RayCronJob=0x1", 'invalid value of RayCronJob=0x1, err: strconv.ParseBool: parsing "0x1": invalid syntax'),
        # Go quotes the value in ParseBool's error; the raw copy is escaped so the message stays one line.
        ("RayCronJob=a\nb", 'invalid value of RayCronJob=a\\nb, err: strconv.ParseBool: parsing "a\\nb": invalid syntax'),
        ("allalpha=true", "unrecognized feature gate: allalpha"),
    ],
)  # fmt: skip
def test_parse_refuses_as_component_base_does(spec: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as caught:
        FeatureGates.parse(spec)
    assert str(caught.value) == message


def test_empty_items_are_skipped_and_a_later_item_wins() -> None:
    assert FeatureGates.parse("") == FeatureGates.parse(",,")
    gates = FeatureGates.parse("RayCronJob=true,,RayCronJob=0")
    assert not gates.enabled(Feature.RAY_CRON_JOB)


def test_all_alpha_sets_every_alpha_gate_not_named() -> None:
    gates = FeatureGates.parse("RayCronJob=1,AllAlpha=true,RayClusterMTLS=false")
    assert gates.enabled(Feature.RAY_CRON_JOB) and gates.source(Feature.RAY_CRON_JOB) == "--feature-gates"
    assert not gates.enabled(Feature.RAY_CLUSTER_MTLS)
    for feature in set(ALPHA) - {Feature.RAY_CRON_JOB, Feature.RAY_CLUSTER_MTLS}:
        assert gates.enabled(feature)
        assert gates.source(feature) == "--feature-gates AllAlpha"
    for feature in BETA:
        assert gates.enabled(feature) and gates.source(feature) == "default"
    # Named before or after the sweep, a gate keeps its own value.
    assert not FeatureGates.parse("RayClusterMTLS=false,AllAlpha=true").enabled(Feature.RAY_CLUSTER_MTLS)


def test_all_beta_false_turns_the_beta_gates_off_and_leaves_alpha_ones_alone() -> None:
    gates = FeatureGates.parse("AllBeta=false,RayJobDeletionPolicy=true,RayCronJob=true")
    assert gates.enabled(Feature.RAY_JOB_DELETION_POLICY) and gates.enabled(Feature.RAY_CRON_JOB)
    for feature in set(BETA) - {Feature.RAY_JOB_DELETION_POLICY}:
        assert not gates.enabled(feature)
    for feature in set(ALPHA) - {Feature.RAY_CRON_JOB}:
        assert not gates.enabled(feature) and gates.source(feature) == "default"


def test_all_alpha_false_only_restates_the_defaults() -> None:
    gates = FeatureGates.parse("AllAlpha=false")
    assert all(gates.enabled(f) == SPECS[f].default for f in Feature)


GA_TABLE = {
    "Locked": GateSpec(True, Stage.GA, locked=True),
    "Graduated": GateSpec(True, Stage.GA),
    "Going": GateSpec(False, Stage.DEPRECATED, locked=True),
    "New": GateSpec(False, Stage.ALPHA),
    "Settling": GateSpec(True, Stage.BETA),
}


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ({"Locked": False}, "cannot set feature gate Locked to false, feature is locked to true"),
        ({"Locked": False, "Going": True}, "[cannot set feature gate Locked to false, feature is locked to true, "
                                           "cannot set feature gate Going to true, feature is locked to false]"),
        # The first unknown name ends the check; what was found before it is reported with it.
        ({"Locked": False, "Nope": True, "Going": True}, "[cannot set feature gate Locked to false, feature is "
                                                         "locked to true, unrecognized feature gate: Nope]"),
    ],
)  # fmt: skip
def test_a_locked_gate_cannot_leave_its_default(requests: dict[str, bool], message: str) -> None:
    with pytest.raises(FeatureGateError) as caught:
        features.check_requests(requests, GA_TABLE)
    assert str(caught.value) == message


def test_a_locked_gate_may_be_set_to_its_default_and_sweeps_pass_over_ga_and_deprecated_gates() -> None:
    requests = {"Locked": True, "AllAlpha": True, "AllBeta": False}
    features.check_requests(requests, GA_TABLE)
    assert features.effective(requests, GA_TABLE) == {
        "Locked": "Locked",
        "New": "AllAlpha",
        "Settling": "AllBeta",
    }


def test_setting_a_ga_or_deprecated_gate_by_name_warns_as_component_base_does() -> None:
    specs = {
        **SPECS,
        Feature.RAY_CLUSTER_STATUS_CONDITIONS: GateSpec(True, Stage.GA),
        Feature.RAY_CRON_JOB: GateSpec(False, Stage.DEPRECATED),
    }
    gates = FeatureGates({}, {}, {Feature.RAY_CLUSTER_STATUS_CONDITIONS: True, Feature.RAY_CRON_JOB: False})
    assert gates.warnings(specs) == [
        "Warning: setting GA feature gate. It will be removed in a future release. "
        "featureGate=RayClusterStatusConditions value=true",
        "Warning: setting deprecated feature gate. It will be removed in a future release. "
        "featureGate=RayCronJob value=false",
    ]
    assert FeatureGates.parse("RayJobDeletionPolicy=true,AllAlpha=true").warnings() == []


def test_from_mapping() -> None:
    assert FeatureGates.from_mapping({"RayClusterMTLS": True}).enabled(Feature.RAY_CLUSTER_MTLS)
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: Bogus"):
        FeatureGates.from_mapping({"Bogus": True})


def test_the_environment_names_gates_in_upper_case_and_says_where_each_came_from() -> None:
    env = GateRequests.from_environment({"KUBERAY_FEATURE_RAYSERVICEINCREMENTALUPGRADE": "F", "PATH": "/x"})
    gates = env.resolve()
    assert not gates.enabled(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE)
    assert (
        gates.source(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE)
        == "KUBERAY_FEATURE_RAYSERVICEINCREMENTALUPGRADE"
    )
    assert gates.source(Feature.RAY_CRON_JOB) == "default"
    overlaid = env.overlaid(GateRequests.parse("RayServiceIncrementalUpgrade=1")).resolve()
    assert overlaid.enabled(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE)
    assert overlaid.source(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE) == "--feature-gates"


def test_a_gate_named_anywhere_beats_a_sweep_from_anywhere() -> None:
    env = GateRequests.from_environment(
        {"KUBERAY_FEATURE_RAYCRONJOB": "0", "KUBERAY_FEATURE_ALLBETA": "false"}
    )
    gates = env.overlaid(GateRequests.parse("AllAlpha=true,RayClusterStatusConditions=true")).resolve()
    assert not gates.enabled(Feature.RAY_CRON_JOB)
    assert gates.source(Feature.RAY_CRON_JOB) == "KUBERAY_FEATURE_RAYCRONJOB"
    assert (
        gates.enabled(Feature.RAY_CLUSTER_MTLS)
        and gates.source(Feature.RAY_CLUSTER_MTLS) == "--feature-gates AllAlpha"
    )
    assert gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert not gates.enabled(Feature.RAY_JOB_DELETION_POLICY)
    assert gates.source(Feature.RAY_JOB_DELETION_POLICY) == "KUBERAY_FEATURE_ALLBETA"
    # The flag's AllBeta replaces the environment's.
    flipped = env.overlaid(GateRequests.parse("AllBeta=true")).resolve()
    assert flipped.enabled(Feature.RAY_JOB_DELETION_POLICY)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"KUBERAY_FEATURE_RayCronJob": "true"},
         "invalid environment variable KUBERAY_FEATURE_RayCronJob: unrecognized feature gate: RayCronJob"),
        ({"KUBERAY_FEATURE_RAYCRONJOB": ""},
         'invalid environment variable KUBERAY_FEATURE_RAYCRONJOB: invalid value of RayCronJob=, err: '
         'strconv.ParseBool: parsing "": invalid syntax'),
        ({"KUBERAY_FEATURE_RAYCRONJOB": "yes"},
         'invalid environment variable KUBERAY_FEATURE_RAYCRONJOB: invalid value of RayCronJob=yes, err: '
         'strconv.ParseBool: parsing "yes": invalid syntax'),
    ],
)  # fmt: skip
def test_the_environment_refuses_unknown_gates_and_bad_values(environ: dict[str, str], message: str) -> None:
    with pytest.raises(FeatureGateError) as caught:
        GateRequests.from_environment(environ)
    assert str(caught.value) == message


@pytest.mark.parametrize("value", ["1", "t", "TRUE", " true "])
def test_the_environment_takes_the_flags_spellings(value: str) -> None:
    gates = GateRequests.from_environment({"KUBERAY_FEATURE_ALLALPHA": value}).resolve()
    assert all(gates.enabled(f) for f in ALPHA)
