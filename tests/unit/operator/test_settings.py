import json
import os

import pytest

from kuberay.api.features import SPECS, Feature, Stage
from kuberay.api.settings import REFUSE, Environment
from kuberay.operator.main import run
from kuberay.operator.settings import SettingsError, parse


def test_upstream_defaults():
    settings = parse([], environ={})
    config = settings.config
    assert (config.metrics_addr, config.probe_addr, config.enable_leader_election) == (":8080", ":8082", True)
    assert (config.reconcile_concurrency, config.qps, config.burst) == (1, 100.0, 200)
    assert settings.watch_namespaces == []
    assert settings.environment == Environment() and settings.runtime.reconcile_timeout == 300
    assert settings.kubeconfig is None


def test_go_style_flags():
    settings = parse(
        [
            "-metrics-addr=:9090",
            "--enable-leader-election=false",
            "--reconcile-concurrency",
            "4",
            "--watch-namespace=a, b",
            "--use-kubernetes-proxy",
        ],
        environ={"DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "true"},
    )
    config = settings.config
    assert config.metrics_addr == ":9090" and not config.enable_leader_election
    assert config.reconcile_concurrency == 4 and config.use_kubernetes_proxy
    assert config.delete_ray_job_after_job_finishes and settings.delete_rayjob_after_job_finishes
    assert settings.watch_namespaces == ["a", "b"]


def test_upstream_v1_8_list_flags():
    config = parse(
        [
            "--allowed-node-labels=topology.kubernetes.io/zone, nvidia.com/gpu.clique",
            "--node-event-forwarder-sources=kubelet",
            "--node-event-forwarder-reasons",
            "NodeNotReady,,Rebooted",
            "-node-event-forwarder-types=Warning",
        ],
        environ={},
    ).config
    assert config.allowed_node_labels == ["topology.kubernetes.io/zone", "nvidia.com/gpu.clique"]
    assert config.node_event_forwarder_sources == ["kubelet"]
    assert config.node_event_forwarder_reasons == ["NodeNotReady", "Rebooted"]
    assert config.node_event_forwarder_types == ["Warning"]
    defaults = parse([], environ={}).config
    assert defaults.allowed_node_labels == defaults.node_event_forwarder_types == []


def test_a_config_file_wins_over_flags_but_feature_gates_still_apply(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nreconcileConcurrency: 3\n")
    settings = parse(
        [f"--config={path}", "--reconcile-concurrency=9", "--feature-gates=RayCronJob=true"], environ={}
    )
    assert settings.config.reconcile_concurrency == 3
    assert settings.feature_gates.enabled(Feature.RAY_CRON_JOB)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--feature-gates=NoSuchGate=true"], "unrecognized feature gate: NoSuchGate"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--log-stdout-encoder=xml"], "invalid choice: 'xml'"),
        (["--batch-scheduler=volcano", "--enable-batch-scheduler"], "Please use batch-scheduler only"),
        (["--reconcile-concurrency=-1"], "reconcile concurrency -1"),
        (["--config=/does/not/exist"], "failed to read config file /does/not/exist"),
        (
            ["--allowed-node-labels=zone,-bad"],
            "argument --allowed-node-labels/-allowed-node-labels: invalid node label key '-bad'",
        ),
    ],
)
def test_bad_settings_name_the_culprit(argv, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        parse(argv, environ={})


def test_the_environment_is_read_into_the_tree_in_flag_and_config_file_mode(tmp_path):
    environ = {
        "ENABLE_PROBES_INJECTION": "FALSE",
        "USE_INGRESS_ON_OPENSHIFT": "true",
        "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "45",
        "RAYSERVICE_UPGRADE_TIMEOUT_SECONDS": "600",
        "ENABLE_ZERO_DOWNTIME": "false",
        "KUBECONFIG": f"/a/config{os.pathsep}/b/config",
    }
    path = tmp_path / "config.yaml"
    path.write_text("deleteRayJobAfterJobFinishes: true\n")
    for argv in ([], [f"--config={path}"]):
        settings = parse(argv, environ=environ)
        env = settings.environment
        assert not env.pods.probes_injection and env.pods.init_container_injection
        assert env.raycluster.use_ingress_on_openshift and env.rayjob.status_check_timeout == 45
        assert (env.rayservice.upgrade_timeout, env.rayservice.zero_downtime) == (600.0, False)
        assert settings.kubeconfig == "/a/config"
    assert settings.delete_rayjob_after_job_finishes
    assert parse(["--kubeconfig=/c"], environ=environ).kubeconfig == "/c"
    assert parse([], environ={}).environment.rayservice.upgrade_timeout is None


def test_runtime_flags():
    settings = parse(["--reconcile-timeout=2.5", "--leader-election-lease-duration=30"], environ={})
    assert settings.runtime.reconcile_timeout == 2.5 and settings.leader_election.lease_duration == 30


def test_every_environment_variable_is_declared_once_with_its_rule():
    variables = list(Environment.variables())
    names = [variable.name for _, _, variable in variables]
    assert len(names) == len(set(names))
    assert {"ENABLE_INIT_CONTAINER_INJECTION", "RAYJOB_CLUSTER_START_TIMEOUT_SECONDS",
            "ENABLE_ZERO_DOWNTIME"} <= set(names)  # fmt: skip
    assert all(variable.rule and variable.meaning for _, _, variable in variables)


# Upstream's operator parses these with strconv.Atoi (or Go's runtime, TZ) and falls back on garbage.
UPSTREAM_FALLBACKS = {
    "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": ("raycluster.requeue_seconds", 300),
    "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": ("rayjob.status_check_timeout", 300),
    "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS": ("rayjob.transition_grace_period", 300),
    "TZ": ("raycronjob.local_time_zone", "UTC"),
}


def test_the_lenient_variables_are_exactly_upstreams():
    lenient = {variable.name for _, _, variable in Environment.variables() if variable.fallback is not REFUSE}
    assert lenient == set(UPSTREAM_FALLBACKS)


@pytest.mark.parametrize("name", sorted(UPSTREAM_FALLBACKS))
def test_garbage_in_an_upstream_lenient_variable_falls_back_with_one_warning(name):
    path, used = UPSTREAM_FALLBACKS[name]
    settings = parse([], environ={name: "invalid"})
    branch, leaf = path.split(".")
    assert getattr(getattr(settings.environment, branch), leaf) == used
    [line] = settings.fallbacks
    assert line.startswith(f"invalid environment variable {name}='invalid' (")
    assert line.endswith(f"); using {used!r} as upstream does")


@pytest.mark.parametrize(
    "environ",
    [{"RAYSERVICE_UPGRADE_TIMEOUT_SECONDS": " 60"}, {"RAYJOB_CLUSTER_START_TIMEOUT_SECONDS": "1.5"}],
)
def test_a_bad_value_in_a_variable_only_we_read_is_refused(environ):
    [(name, value)] = environ.items()
    with pytest.raises(
        SettingsError, match=f"invalid environment variable {name}='{value}': must be an integer"
    ):
        parse([], environ=environ)


def test_a_fallback_is_logged_as_one_warning_at_start(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", "invalid")
    # No kubeconfig to load: the operator stops after its start-up lines.
    assert run([f"--kubeconfig={tmp_path / 'missing'}"], controllers=[]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [warning] = [line for line in lines if line["level"] == "warning"]
    assert "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS='invalid'" in warning["msg"]
    assert warning["msg"].endswith("using 300 as upstream does")


@pytest.mark.parametrize("argv", [["--reconcile-timeout=0"], ["--reconcile-timeout=soon"]])
def test_a_bad_reconcile_timeout_is_refused(argv):
    with pytest.raises(SettingsError, match="reconcile-timeout"):
        parse(argv, environ={})


def test_a_bad_environment_value_stops_the_operator_with_one_line(monkeypatch, capsys):
    monkeypatch.setenv("RAYJOB_CLUSTER_START_TIMEOUT_SECONDS", "5m")
    assert run([], controllers=[]) == 2
    assert capsys.readouterr().err == (
        "kuberay-operator: invalid environment variable "
        "RAYJOB_CLUSTER_START_TIMEOUT_SECONDS='5m': must be an integer number of seconds\n"
    )


def test_feature_gates_from_the_environment_and_the_flag_the_flag_winning():
    environ = {"KUBERAY_FEATURE_RAYCRONJOB": "true", "KUBERAY_FEATURE_RAYCLUSTERSTATUSCONDITIONS": "FALSE",
               "KUBERAY_FEATURE_RAYCLUSTERMTLS": "true"}  # fmt: skip
    gates = parse(["--feature-gates=RayClusterMTLS=false"], environ=environ).feature_gates
    assert gates.enabled(Feature.RAY_CRON_JOB) and not gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS)
    assert not gates.enabled(Feature.RAY_CLUSTER_MTLS)
    described = gates.describe()
    assert "RayCronJob=true (KUBERAY_FEATURE_RAYCRONJOB)" in described
    assert "RayClusterMTLS=false (--feature-gates)" in described
    assert "RayJobDeletionPolicy=true (default)" in described


def test_feature_gates_take_go_booleans_and_all_alpha_as_upstreams_operator_does() -> None:
    gates = parse(["--feature-gates", "RayCronJob=1,AllAlpha=true"], environ={}).feature_gates
    assert all(gates.enabled(feature) for feature, spec in SPECS.items() if spec.stage == Stage.ALPHA)
    assert "RayCronJob=true (--feature-gates)" in gates.describe()
    assert "RayClusterMTLS=true (--feature-gates AllAlpha)" in gates.describe()
    assert "RayClusterStatusConditions=true (default)" in gates.describe()


def test_a_gate_named_in_the_environment_beats_the_flags_all_alpha() -> None:
    environ = {"KUBERAY_FEATURE_RAYCRONJOB": "0"}
    gates = parse(["-feature-gates=AllAlpha=T"], environ=environ).feature_gates
    assert not gates.enabled(Feature.RAY_CRON_JOB) and gates.enabled(Feature.RAY_CLUSTER_MTLS)


@pytest.mark.parametrize(
    ("argv", "environ", "line"),
    [
        (["--feature-gates=RayCronJob=yes"], {},
         'invalid --feature-gates: invalid value of RayCronJob=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
        (["--feature-gates=RayCronJob"], {}, "invalid --feature-gates: missing bool value for RayCronJob"),
        (["--feature-gates=AllGA=true"], {}, "invalid --feature-gates: unrecognized feature gate: AllGA"),
        ([], {"KUBERAY_FEATURE_ALLALPHA": "on"},
         'invalid environment variable KUBERAY_FEATURE_ALLALPHA: invalid value of AllAlpha=on, err: '
         'strconv.ParseBool: parsing "on": invalid syntax'),
    ],
)  # fmt: skip
def test_bad_feature_gates_are_one_line_in_component_bases_words(
    argv: list[str], environ: dict[str, str], line: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        parse(argv, environ=environ)
    assert str(caught.value) == line


def test_help_lists_the_gates_as_component_base_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--help"], environ={})
    text = " ".join(capsys.readouterr().out.split())
    assert "AllAlpha=true|false (ALPHA - default=false)" in text
    assert "RayClusterStatusConditions=true|false (BETA - default=true)" in text
    assert "TopologyLabelDelivery=true|false (ALPHA - default=false)" in text
    assert "KUBERAY_FEATURE_ALLALPHA" in text


def test_help_lists_every_environment_variable(capsys):
    with pytest.raises(SystemExit):
        parse(["--help"], environ={})
    text = capsys.readouterr().out
    assert all(variable.name in text for _, _, variable in Environment.variables())
    assert "RAYSERVICE_UPGRADE_TIMEOUT_SECONDS (default unset;" in text
