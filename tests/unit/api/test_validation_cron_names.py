"""The cron-schedule and name checks whose texts reach validation messages: what they accept and their exact
error texts (taken from the Go sources: robfig/cron v3, apimachinery)."""

from __future__ import annotations

import pytest

from kuberay.api.validation import cron, names


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
