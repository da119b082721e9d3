import pytest

from kuberay.api.features import Feature
from kuberay.operator.settings import SettingsError, parse


def test_upstream_defaults():
    settings = parse([], environ={})
    config = settings.config
    assert (config.metrics_addr, config.probe_addr, config.enable_leader_election) == (":8080", ":8082", True)
    assert (config.reconcile_concurrency, config.qps, config.burst) == (1, 100.0, 200)
    assert settings.watch_namespaces == []


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
    assert config.delete_ray_job_after_job_finishes
    assert settings.watch_namespaces == ["a", "b"]


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
    ],
)
def test_bad_settings_name_the_culprit(argv, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        parse(argv, environ={})
