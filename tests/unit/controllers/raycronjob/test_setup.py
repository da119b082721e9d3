"""The controller's options from the settings tree: the operator's zone from `TZ`, a bad `TZ` refused."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

from kuberay.api.features import Feature, FeatureGates
from kuberay.api.settings import Environment, OperatorSettings
from kuberay.controllers.raycronjob import setup


def settings(environ: dict[str, str], gates: FeatureGates | None = None) -> OperatorSettings:
    return OperatorSettings(
        environment=Environment.from_mapping(environ), feature_gates=gates or FeatureGates()
    )


def test_the_operators_zone_comes_from_tz() -> None:
    assert setup.options_from(settings({"TZ": "Asia/Taipei"})).local_zone == ZoneInfo("Asia/Taipei")
    assert setup.options_from(settings({"TZ": ":Europe/Berlin"})).local_zone == ZoneInfo("Europe/Berlin")
    assert setup.options_from(settings({"TZ": "UTC"})).local_zone is UTC


def test_an_unknown_tz_is_utc_as_gos_time_local() -> None:
    assert setup.options_from(settings({"TZ": "Mars/Olympus"})).local_zone is UTC


def test_the_gate_decides() -> None:
    assert not setup.enabled(settings({}))
    assert setup.enabled(settings({}, FeatureGates({Feature.RAY_CRON_JOB: True})))
