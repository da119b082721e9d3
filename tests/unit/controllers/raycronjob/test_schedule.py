"""Fire times as robfig/cron computes them: strictly after, whole seconds, descriptors, `@every`, zones and
the day-of-month / day-of-week rule. Expected times are worked out from the calendar (2024-01-01 is a
Monday)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from kuberay.controllers.raycronjob import schedule


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "after", "fires"),
    [
        ("*/5 * * * *", "2024-01-01T00:00:00", "2024-01-01T00:05:00"),
        ("*/5 * * * *", "2024-01-01T00:05:00", "2024-01-01T00:10:00"),  # strictly after
        ("*/5 * * * *", "2024-01-01T00:04:59.900", "2024-01-01T00:05:00"),
        ("* * * * *", "2024-01-01T00:00:30", "2024-01-01T00:01:00"),
        ("0 0 13 * *", "2024-01-01T00:00:00", "2024-01-13T00:00:00"),  # day of week is a star: AND
        ("0 0 13 * 5", "2024-01-01T00:00:00", "2024-01-05T00:00:00"),  # both restricted: OR (Friday)
        ("0 0 */2 * 1", "2024-01-01T00:00:00", "2024-01-03T00:00:00"),  # a step makes */2 no star: OR
        ("0 0 1-31 * 1", "2024-01-01T00:00:00", "2024-01-02T00:00:00"),  # OR with every day: daily
        ("0 0 ? * 1", "2024-01-01T00:00:00", "2024-01-08T00:00:00"),  # ? is a star: AND (Mondays)
        ("0 0 * * mon-fri", "2024-01-05T12:00:00", "2024-01-08T00:00:00"),
        ("0 12 * jan,feb *", "2024-01-31T13:00:00", "2024-02-01T12:00:00"),
        ("0 0 ?/2 * 1", "2024-01-01T00:00:00", "2024-01-03T00:00:00"),  # ? with a step: no star either
        ("0 0 *,5 * 1", "2024-01-01T00:00:00", "2024-01-08T00:00:00"),  # a star in a list is a star: AND
        ("5/15 * * * *", "2024-01-01T00:06:00", "2024-01-01T00:20:00"),  # N/step is N-max/step
        ("0 0 1 jan-dec/3 *", "2024-01-02T00:00:00", "2024-04-01T00:00:00"),
        ("@weekly", "2024-01-01T00:00:00", "2024-01-07T00:00:00"),
        ("@monthly", "2024-01-15T00:00:00", "2024-02-01T00:00:00"),
        ("@yearly", "2024-01-15T00:00:00", "2025-01-01T00:00:00"),
        ("@daily", "2024-01-01T00:00:00", "2024-01-02T00:00:00"),
        ("@hourly", "2024-01-01T00:59:59", "2024-01-01T01:00:00"),
    ],
)
def test_next_fire_time_in_utc(expression: str, after: str, fires: str) -> None:
    assert schedule.parse(expression, UTC).next(at(after)) == at(fires)


@pytest.mark.parametrize(
    ("expression", "after", "fires"),
    [
        ("@every 5s", "2024-01-01T00:00:00", "2024-01-01T00:00:05"),
        ("@every 5s", "2024-01-01T00:00:00.700", "2024-01-01T00:00:05"),  # the fraction is dropped
        ("@every 1m30s", "2024-01-01T00:00:10", "2024-01-01T00:01:40"),  # a delay, not a wall-clock slot
        ("@every 1500ms", "2024-01-01T00:00:00", "2024-01-01T00:00:01"),  # cut to whole seconds
        ("@every 100ms", "2024-01-01T00:00:00", "2024-01-01T00:00:01"),  # at least one second
    ],
)
def test_every_is_a_constant_delay(expression: str, after: str, fires: str) -> None:
    assert schedule.parse(expression, ZoneInfo("Asia/Taipei")).next(at(after)) == at(fires)


def test_a_schedule_is_read_in_its_zone() -> None:
    taipei = schedule.parse("45 21 * * *", ZoneInfo("Asia/Taipei"))  # UTC+8, no daylight saving
    assert taipei.next(at("2024-01-01T00:00:00")) == at("2024-01-01T13:45:00")
    assert taipei.next(at("2024-01-01T13:45:00")) == at("2024-01-02T13:45:00")
    new_york = schedule.parse("0 9 * * *", ZoneInfo("America/New_York"))
    assert new_york.next(at("2024-01-10T00:00:00")) == at("2024-01-10T14:00:00")  # EST, UTC-5
    assert new_york.next(at("2024-07-10T00:00:00")) == at("2024-07-10T13:00:00")  # EDT, UTC-4


def test_zone_names_are_gos() -> None:
    local = timezone(timedelta(hours=3))
    assert schedule.zone_named("UTC", local) is UTC
    assert schedule.zone_named("", local) is UTC
    assert schedule.zone_named("Local", local) is local
    assert schedule.zone_named("Europe/Berlin", local) == ZoneInfo("Europe/Berlin")


# robfig/cron's own daylight-saving table (its spec_test.go), seconds field dropped: a time that a
# spring-forward skips does not happen that day; an hour that a fall-back repeats fires twice.
@pytest.mark.parametrize(
    ("after", "zone", "expression", "fires"),
    [
        ("2012-03-11T00:00:00-05:00", "America/New_York", "30 2 11 Mar *", "2013-03-11T02:30:00-04:00"),
        ("2012-03-11T01:00:00-05:00", "America/New_York", "0 * * * *", "2012-03-11T03:00:00-04:00"),
        ("2012-03-11T01:00:00-05:00", "America/New_York", "0 1 * * *", "2012-03-12T01:00:00-04:00"),
        ("2012-03-11T00:00:00-05:00", "America/New_York", "0 2 * * *", "2012-03-12T02:00:00-04:00"),
        ("2012-11-04T00:00:00-04:00", "America/New_York", "30 2 04 Nov *", "2012-11-04T02:30:00-05:00"),
        ("2012-11-04T01:45:00-04:00", "America/New_York", "30 1 04 Nov *", "2012-11-04T01:30:00-05:00"),
        ("2012-11-04T01:00:00-04:00", "America/New_York", "0 * * * *", "2012-11-04T01:00:00-05:00"),
        ("2012-11-04T01:00:00-04:00", "America/New_York", "0 1 * * *", "2012-11-04T01:00:00-05:00"),
        ("2012-11-04T01:00:00-05:00", "America/New_York", "0 1 * * *", "2012-11-05T01:00:00-05:00"),
        ("2012-11-04T00:00:00-04:00", "America/New_York", "0 2 * * *", "2012-11-04T02:00:00-05:00"),
        ("2012-11-04T00:00:00-04:00", "America/New_York", "0 3 3 * *", "2012-12-03T03:00:00-05:00"),
        ("2018-10-17T05:00:00-04:00", "America/Sao_Paulo", "0 9 10 * *", "2018-11-10T06:00:00-05:00"),
        ("2018-02-14T05:00:00-05:00", "America/Sao_Paulo", "0 9 22 * *", "2018-02-22T07:00:00-05:00"),
    ],
)
def test_daylight_saving_as_robfig(after: str, zone: str, expression: str, fires: str) -> None:
    fire = schedule.parse(expression, ZoneInfo(zone)).next(datetime.fromisoformat(after))
    assert fire == datetime.fromisoformat(fires)


def test_a_valid_schedule_that_never_fires_says_so() -> None:
    with pytest.raises(schedule.NeverFires, match="'0 0 30 2 \\*' has no fire time after"):
        schedule.parse("0 0 30 2 *", UTC).next(at("2024-01-01T00:00:00"))
