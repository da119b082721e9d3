"""When a RayCronJob fires: the fire times of its schedule, as upstream's robfig/cron `ParseStandard` and
`Schedule.Next` compute them (the schedule was already accepted by `kuberay.api.validation.cron`).

- `Next(t)` is strictly after `t`, at one-second resolution (the fraction of a second of `t` is dropped).
- Five-field schedules and the `@yearly`/`@monthly`/... descriptors are wall-clock times in the schedule's
  zone (`spec.timeZone`, or the operator's own zone); the arithmetic is croniter's. Day of month and day of
  week are OR-ed only when neither is a robfig "star" (`*` or `?`, without a step above 1); croniter decides
  the same from whether a field reads `*`, so star fields are handed to it as `*`, and a non-star field
  that covers its whole range (which croniter also shortens to `*`) makes every day match, as in robfig.
- `@every <duration>` is a constant delay from `t`, whatever the zone: the duration is cut to whole seconds
  (at least one), as robfig's `Every` does.

Zone names are Go's: `UTC` (and the empty name), `Local` (the operator's zone), or an IANA name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

from kuberay.controllers.errors import ReconcileError
from kubesemantics.goparse import parse_duration

# robfig's descriptors, as five-field schedules (seconds are always 0).
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = "@every "
_DAY_OF_MONTH, _DAY_OF_WEEK = 2, 4
_SYSTEM_ZONE_FILE = Path("/etc/localtime")


class NeverFires(ReconcileError, ValueError):
    """A valid schedule that names no existing time (``0 0 30 2 *``, February 30th)."""


class Schedule(Protocol):
    def next(self, after: datetime) -> datetime:
        """The first fire time strictly after `after` (aware), in UTC."""
        ...


@dataclass(frozen=True)
class ConstantDelay:
    """`@every <duration>`: fires every `seconds` seconds, counted from the time it is asked about."""

    seconds: int

    def next(self, after: datetime) -> datetime:
        return _whole_second(after) + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class WallClock:
    """A five-field schedule in `zone`."""

    expression: str
    zone: tzinfo

    def next(self, after: datetime) -> datetime:
        fire = _whole_second(after).astimezone(self.zone)
        while True:
            try:
                found: datetime = croniter(self.expression, fire).get_next(datetime)
            except CroniterBadDateError:
                # robfig gives up after five years too (and upstream then fails on every pass).
                raise NeverFires(f"the schedule {self.expression!r} has no fire time after {after}") from None
            fire = found
            # A wall-clock time that a spring-forward skips does not happen that day (robfig), while
            # croniter moves it past the gap: such a fire no longer matches, and the search goes on.
            if croniter.match(self.expression, fire.replace(tzinfo=None)):
                return fire.astimezone(UTC)


def parse(schedule: str, zone: tzinfo) -> Schedule:
    """The schedule of a validated `spec.schedule` in `zone` (ignored by `@every`)."""
    schedule = schedule.strip()
    if schedule.startswith(_EVERY):
        nanoseconds = parse_duration(schedule.removeprefix(_EVERY).strip())
        return ConstantDelay(max(nanoseconds // 1_000_000_000, 1))
    return WallClock(_croniter_expression(_DESCRIPTORS.get(schedule, schedule)), zone)


def zone_named(name: str, local: tzinfo) -> tzinfo:
    """Go's `time.LoadLocation(name)`, with `local` standing for `Local`."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return local
    return ZoneInfo(name)


def system_zone() -> tzinfo:
    """The machine's zone (Go's `time.Local` when `TZ` is unset): `/etc/localtime`, else UTC."""
    try:
        with _SYSTEM_ZONE_FILE.open("rb") as file:
            return ZoneInfo.from_file(file, key="Local")
    except (OSError, ValueError):
        return UTC


def _whole_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def _croniter_expression(schedule: str) -> str:
    fields = schedule.split()
    stars = [_is_star(field) for field in fields]
    for index, star in enumerate(stars):
        if star:
            fields[index] = "*"
        else:
            # robfig reads `?` as `*`; croniter knows it only in some positions.
            fields[index] = fields[index].replace("?", "*")
    if not stars[_DAY_OF_MONTH] and not stars[_DAY_OF_WEEK]:
        expanded, _ = croniter.expand(" ".join(fields))
        if "*" in (expanded[_DAY_OF_MONTH][0], expanded[_DAY_OF_WEEK][0]):
            # OR with a field that matches every day: every day matches.
            fields[_DAY_OF_MONTH] = fields[_DAY_OF_WEEK] = "*"
    return " ".join(fields)


def _is_star(field: str) -> bool:
    """robfig's star bit: some part of the list is `*` or `?` with no step above 1."""
    for part in field.split(","):
        head, _, step = part.partition("/")
        if head in ("*", "?") and (not step or int(step) <= 1):
            return True
    return False
