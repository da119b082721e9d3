from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubesemantics import times

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)


def test_time_is_whole_seconds_in_utc_and_micro_time_keeps_microseconds() -> None:
    east = MOMENT.astimezone(timezone(timedelta(hours=2)))
    assert times.format_time(east) == "2026-01-02T03:04:05Z"
    assert times.format_micro_time(east) == "2026-01-02T03:04:05.120000Z"


def test_time_follows_each_second_asked_for_in_any_order() -> None:
    """The text of the last second asked for is kept: each new second, earlier or later, gets its own."""
    asked = [MOMENT, MOMENT.replace(microsecond=999999), MOMENT + timedelta(seconds=1), MOMENT]
    asked += [
        MOMENT.replace(year=1971),
        datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
    ]
    assert [times.format_time(moment) for moment in asked] == [
        "2026-01-02T03:04:05Z",
        "2026-01-02T03:04:05Z",
        "2026-01-02T03:04:06Z",
        "2026-01-02T03:04:05Z",
        "1971-01-02T03:04:05Z",
        "1969-12-31T23:59:59Z",
    ]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("2026-01-02T03:04:05Z", MOMENT.replace(microsecond=0)),
        ("2026-01-02T03:04:05.12Z", MOMENT),
        ("2026-01-02T03:04:05.120000999Z", MOMENT),
        ("2026-01-02t05:04:05.12+02:00", MOMENT),
        ("2026-01-02T03:04:05", MOMENT.replace(microsecond=0)),
    ],
)
def test_parse_reads_any_rfc3339_date_time(text: str, parsed: datetime) -> None:
    assert times.parse_time(text) == parsed
    assert times.parse_time(text).tzinfo is not None


@pytest.mark.parametrize("text", ["", "2026-01-02", "2026-01-02 03:04:05Z", "yesterday"])
def test_parse_refuses_what_is_not_a_date_time(text: str) -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        times.parse_time(text)


def test_go_string_trims_the_fraction_as_go_does() -> None:
    assert times.go_string(MOMENT) == "2026-01-02 03:04:05.12 +0000 UTC"
    assert times.go_string(MOMENT.replace(microsecond=0)) == "2026-01-02 03:04:05 +0000 UTC"
