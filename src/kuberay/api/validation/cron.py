"""robfig/cron v3's `ParseStandard`, as a check: accepts exactly its schedules and fails with its messages.

Standard schedules are five whitespace-separated fields (minute, hour, day of month, month, day of week;
names such as ``jan`` and ``mon`` allowed; ``*``, ``?``, ranges ``a-b``, steps ``/n``, lists ``a,b``), or a
descriptor: ``@yearly``, ``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``, ``@hourly``,
``@every <Go duration>``. robfig's ``TZ=``/``CRON_TZ=`` prefixes are left out: upstream rejects any
schedule containing ``TZ`` before parsing it. Computing fire times is the RayCronJob controller's business, not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kuberay.api.errors import InputError
from kubesemantics.goparse import GoParseError, atoi, parse_duration


class CronError(InputError):
    """The schedule is rejected; `str(error)` is robfig/cron's text."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: Mapping[str, int]


_MONTH_NAMES = {
    name: i + 1
    for i, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DAY_NAMES = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# The seconds field is implied ("0") and still parsed against its bounds, as robfig does.
_FIELDS = (
    _Bounds(0, 59, {}),  # second
    _Bounds(0, 59, {}),  # minute
    _Bounds(0, 23, {}),  # hour
    _Bounds(1, 31, {}),  # day of month
    _Bounds(1, 12, _MONTH_NAMES),
    _Bounds(0, 6, _DAY_NAMES),
)
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


def _number(text: str) -> int:
    try:
        number = atoi(text)
    except GoParseError as error:
        raise CronError(f"failed to parse int from {text}: {error}") from None
    if number < 0:
        raise CronError(f"negative number ({number}) not allowed: {text}")
    return number


def _number_or_name(text: str, names: Mapping[str, int]) -> int:
    return names[text.lower()] if text.lower() in names else _number(text)


def _check_range(expression: str, bounds: _Bounds) -> None:
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _number_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _number_or_name(low_and_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1])
        if len(low_and_high) == 1:
            end = bounds.high
    else:
        raise CronError(f"too many slashes: {expression}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expression}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expression}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expression}")


def check_standard(schedule: str) -> None:
    """Raises `CronError` unless robfig/cron's `ParseStandard` accepts `schedule`."""
    if not schedule:
        raise CronError("empty spec string")
    if schedule.startswith("@"):
        if schedule in _DESCRIPTORS:
            return
        if schedule.startswith("@every "):
            try:
                parse_duration(schedule.removeprefix("@every "))
            except GoParseError as error:
                raise CronError(f"failed to parse duration {schedule}: {error}") from None
            return
        raise CronError(f"unrecognized descriptor: {schedule}")
    fields = schedule.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, bounds in zip(["0", *fields], _FIELDS, strict=True):
        for expression in (part for part in text.split(",") if part):
            _check_range(expression, bounds)
