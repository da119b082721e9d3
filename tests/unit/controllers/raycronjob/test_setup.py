"""The controller's options from the settings tree: the operator's zone from `TZ` (empty: UTC, as Go's), a bad `TZ`
refused."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

import pytest

from kuberay.api.features import Feature, FeatureGates
from kuberay.api.settings import Environment, OperatorSettings
from kuberay.controllers.raycronjob import schedule, setup


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


def test_an_empty_tz_is_utc_and_no_tz_the_machines_zone_as_gos_time_local(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    machine = ZoneInfo("Pacific/Auckland")
    monkeypatch.setattr(schedule, "system_zone", lambda: machine)
    environment, fallbacks = Environment.read({"TZ": ""})
    assert (environment.raycronjob.local_time_zone, fallbacks) == ("UTC", [])
    assert setup.options_from(settings({"TZ": ""})).local_zone is UTC
    assert setup.options_from(settings({})).local_zone is machine


def test_the_gate_decides() -> None:
    assert not setup.enabled(settings({}))
    assert setup.enabled(settings({}, FeatureGates({Feature.RAY_CRON_JOB: True})))
