"""The controller's options from the settings tree, and the kuberay_job_* metrics."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import CollectorRegistry, generate_latest

from kuberay.api.config import Configuration
from kuberay.api.settings import Environment, OperatorSettings
from kuberay.controllers.rayjob.metrics import RayJobMetrics
from kuberay.controllers.rayjob.setup import options_from
from unit.controllers.rayjob.jobs import NOW, at


def settings(environ: dict[str, str]) -> OperatorSettings:
    return OperatorSettings(environment=Environment.from_mapping(environ))


def test_environment_defaults_and_overrides() -> None:
    default = options_from(settings({}))
    assert (default.settings.transition_grace_period, default.settings.status_check_timeout) == (300, 300)
    assert default.settings.cluster_start_timeout == 300.0 and default.cluster_domain == "cluster.local"
    custom = options_from(
        settings(
            {
                "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS": "-5",  # any integer, as upstream
                "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "0",  # must be positive: default
                "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "TRUE",
                "ENABLE_LOGIN_SHELL": "true",
                "CLUSTER_DOMAIN": "example.org",
                "RAYJOB_CLUSTER_START_TIMEOUT_SECONDS": "0",  # wait forever, as upstream
            }
        )
    )
    assert (custom.settings.transition_grace_period, custom.settings.status_check_timeout) == (-5, 300)
    assert custom.settings.delete_rayjob_after_job_finishes and custom.login_shell
    assert (custom.cluster_domain, custom.settings.cluster_start_timeout) == ("example.org", None)
    from_file = OperatorSettings(config=Configuration(delete_ray_job_after_job_finishes=True))
    assert options_from(from_file).settings.delete_rayjob_after_job_finishes


def test_metrics_duration_on_the_terminal_transition_and_scrape_time_gauges() -> None:
    rayjobs = [
        {
            "metadata": {"name": "a", "namespace": "ns", "uid": "u"},
            "status": {"jobDeploymentStatus": "Failed"},
        }
    ]
    metrics = RayJobMetrics(lambda: rayjobs)
    registry = CollectorRegistry()
    metrics.register(registry)
    job = rayjobs[0]
    running = {"jobDeploymentStatus": "Running", "startTime": at(0), "failed": 1}
    metrics.observe_transition(job, running, {**running, "jobDeploymentStatus": "Running"}, NOW)
    metrics.observe_transition(job, {"jobDeploymentStatus": "Complete"}, {"jobDeploymentStatus": "Complete",
                                                                           "startTime": at(0)}, NOW)  # fmt: skip
    assert b"kuberay_job_execution_duration_seconds{" not in generate_latest(registry)
    metrics.observe_transition(
        job, running, {**running, "jobDeploymentStatus": "Retrying"}, NOW + timedelta(seconds=42)
    )
    text = generate_latest(registry).decode()
    assert ('kuberay_job_execution_duration_seconds{job_deployment_status="Retrying",name="a",namespace="ns",'
            'retry_count="1",uid="u"} 42.0') in text  # fmt: skip
    assert 'kuberay_job_info{name="a",namespace="ns",uid="u"} 1.0' in text
    assert (
        'kuberay_job_deployment_status{deployment_status="Failed",name="a",namespace="ns",uid="u"} 1.0'
        in text
    )
    metrics.forget("a", "ns")
    assert "kuberay_job_execution_duration_seconds{" not in generate_latest(registry).decode()
