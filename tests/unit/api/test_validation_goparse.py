"""The Go parsers and apimachinery checks whose texts reach validation messages: what they accept and
their exact error texts (taken from the Go sources: time, strconv, apimachinery, robfig/cron v3)."""

from __future__ import annotations

import pytest

from kuberay.api.validation import cron, goparse, names


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("0", 0),
        ("-0", 0),
        ("1h30m", 5_400_000_000_000),
        ("1.5s", 1_500_000_000),
        ("1.s", 1_000_000_000),
        (".5ms", 500_000),
        ("+5s", 5_000_000_000),
        ("-1m", -60_000_000_000),
        ("3µs2ns", 3_002),
        ("9223372036854775807ns", 2**63 - 1),
    ],
)
def test_duration_accepts_what_go_accepts(text: str, nanoseconds: int) -> None:
    assert goparse.parse_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("5", 'time: missing unit in duration "5"'),
        ("5x", 'time: unknown unit "x" in duration "5x"'),
        (".s", 'time: invalid duration ".s"'),
        ("h", 'time: invalid duration "h"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ],
)
def test_duration_errors(text: str, message: str) -> None:
    with pytest.raises(goparse.GoParseError) as caught:
        goparse.parse_duration(text)
    assert str(caught.value) == message


def test_atoi() -> None:
    assert goparse.atoi("+7") == 7
    assert goparse.atoi("-30") == -30
    for text in (" 5", "5_0", "", "1e3"):
        with pytest.raises(goparse.GoParseError, match=f'strconv.Atoi: parsing "{text}": invalid syntax'):
            goparse.atoi(text)
    with pytest.raises(goparse.GoParseError, match="value out of range"):
        goparse.atoi("9" * 20)


@pytest.mark.parametrize(
    ("text", "components"),
    [("2.52.0", (2, 52, 0)), ("v2.52", (2, 52)), (" 2.55.0rc1", (2, 55, 0)), ("2.56.0-dev", (2, 56, 0))],
)
def test_generic_version(text: str, components: tuple[int, ...]) -> None:
    assert goparse.parse_generic_version(text) == components


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nightly", 'could not parse "nightly" as version'),
        ("2", 'illegal version string "2"'),
        ("02.1", 'illegal zero-prefixed version component "02" in "02.1"'),
    ],
)
def test_generic_version_errors(text: str, message: str) -> None:
    with pytest.raises(goparse.GoParseError) as caught:
        goparse.parse_generic_version(text)
    assert str(caught.value) == message


def test_versions_compare_component_wise_with_missing_as_zero() -> None:
    assert goparse.version_less_than((2, 51, 9), (2, 52, 0))
    assert not goparse.version_less_than((2, 52), (2, 52, 0))
    assert goparse.version_less_than((2, 9), (2, 10))


def test_time_zones() -> None:
    for zone in ("UTC", "Local", "America/New_York"):
        goparse.load_location(zone)
    with pytest.raises(goparse.GoParseError, match="^time: invalid location name$"):
        goparse.load_location("../etc/passwd")
    with pytest.raises(goparse.GoParseError, match="^unknown time zone Nowhere/City$"):
        goparse.load_location("Nowhere/City")


@pytest.mark.parametrize(
    "schedule",
    [
        "0 3 * * *",
        "*/5 * * * *",
        "0 0 1 * sun",
        "0 0 ? JAN-jun MON-FRI",
        "59 23 31 12 6",
        "@hourly",
        "@every 90s",
        "1,2,,3 * * * *",
    ],
)
def test_cron_accepts(schedule: str) -> None:
    cron.check_standard(schedule)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("0 3 * * * *", "expected exactly 5 fields, found 6: [0 3 * * * *]"),
        ("a * * * *", 'failed to parse int from a: strconv.Atoi: parsing "a": invalid syntax'),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("1/2/3 * * * *", "too many slashes: 1/2/3"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("@every", "unrecognized descriptor: @every"),
        ("@every 1d", 'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'),
    ],
)
def test_cron_errors(schedule: str, message: str) -> None:
    with pytest.raises(cron.CronError) as caught:
        cron.check_standard(schedule)
    assert str(caught.value) == message


def test_name_checks() -> None:
    assert names.dns1035_label("demo-1") == []
    assert names.dns1035_label("a" * 64) == ["must be no more than 63 characters"]
    assert names.dns1123_label("1st") == []
    assert names.label_key("example.com/Name_1") == []
    assert names.label_value("") == []
    assert names.label_key("/name") == ["prefix part must be non-empty"]
    assert names.label_key("") == [
        "name part must be non-empty",
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]
    assert names.label_key("Example.com/x") == [
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]
    assert names.go_list(["a b", "c"]) == "[a b c]"
