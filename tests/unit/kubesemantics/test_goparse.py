"""The Go parsers whose texts reach Kubernetes and KubeRay messages: what they accept and their exact error
texts (taken from the Go sources: time, strconv, apimachinery)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kubesemantics import goparse


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


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
        ("a\nb\tc\x00\x7f", '"a\\nb\\tc\\x00\\x7f"'),
        ("caf\u00e9 \u00a0\u2028", '"caf\u00e9 \\u00a0\\u2028"'),
        ("\U000e0001", '"\\U000e0001"'),
        ("é\u200b", '"é\\u200b"'),
        (b"\xff".decode("utf-8", "surrogateescape"), '"\\xff"'),
    ],
)
def test_quote_writes_what_strconv_quote_writes(text: str, quoted: str) -> None:
    assert goparse.quote(text) == quoted


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
    ("text", "expected"),
    [
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("-1.5s", timedelta(seconds=-1.5)),
        ("0", timedelta(0)),
        ("1500ns", timedelta(microseconds=2)),  # rounded half to even, as timedelta rounds
        ("3μs", timedelta(microseconds=3)),  # Greek mu, as Go accepts
    ],
)
def test_durations_as_timedelta(text: str, expected: timedelta) -> None:
    assert goparse.to_timedelta(text) == expected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (60, "1m0s"),
        (303, "5m3s"),
        (3600, "1h0m0s"),
        (3723, "1h2m3s"),
        (90061, "25h1m1s"),
    ],
)
def test_format_seconds_as_go_prints_a_duration(seconds: int, text: str) -> None:
    assert goparse.format_seconds(seconds) == text


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", True), ("t", True), ("T", True), ("TRUE", True), ("true", True), ("True", True),
     ("0", False), ("f", False), ("F", False), ("FALSE", False), ("false", False), ("False", False)],
)  # fmt: skip
def test_parse_bool_accepts_gos_spellings(text: str, value: bool) -> None:
    assert goparse.parse_bool(text) is value


@pytest.mark.parametrize("text", ["tRuE", "yes", "", " true"])
def test_parse_bool_refuses_the_rest_as_go_does(text: str) -> None:
    with pytest.raises(goparse.GoParseError, match="strconv.ParseBool: parsing .*: invalid syntax"):
        goparse.parse_bool(text)
