"""Go parsers whose error texts surface in Kubernetes' and upstream KubeRay's messages.

Each function accepts exactly what its Go counterpart accepts and fails with the same text, so a message
such as ``invalid cron schedule: failed to parse duration @every 5x: time: unknown unit "x" in duration
"5x"`` reads the same here as from the Go operator:

- `parse_duration`: Go's `time.ParseDuration` (units ns, us, µs, μs, ms, s, m, h; a bare ``0``), the
  duration syntax of Kubernetes too (CEL's `duration()`, the `duration` string format); `to_timedelta`;
  `format_seconds`, the other way: `time.Duration.String()` of a whole number of seconds, as messages print it.
- `human_duration`: apimachinery's `duration.HumanDuration`, the ages kubectl prints.
- `atoi`: Go's `strconv.Atoi` (optional sign, ASCII digits, int64 range).
- `parse_generic_version`: apimachinery's `version.ParseGeneric` (``v1.2``, ``2.52.0rc1``: at least two
  numeric components, anything after them ignored); versions compare component-wise.
- `load_location`: Go's `time.LoadLocation` (``UTC``, ``Local``, IANA names).
- `parse_bool`: Go's `strconv.ParseBool`; `quote`: Go's `strconv.Quote`, as its errors quote the input.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import timedelta
from fractions import Fraction

from kubesemantics.errors import SemanticsError

_NANOSECONDS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_DURATION = (1 << 63) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class GoParseError(SemanticsError):
    """The input is rejected; `str(error)` is the Go error text."""


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def quote(value: str) -> str:
    """`value` as Go's `strconv.Quote` (and `%q`) writes it: a message quoting user input stays one line."""
    out = ['"']
    for char in value:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif 0xDC80 <= code <= 0xDCFF:
            # A byte that was not UTF-8 (Python's surrogateescape); Go sees the byte itself.
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _leading_digits(text: str) -> tuple[str, str]:
    end = 0
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return text[:end], text[end:]


def parse_duration(value: str) -> int:
    """Nanoseconds of a Go duration string such as ``1h30m`` or ``-1.5s``."""
    invalid = GoParseError(f"time: invalid duration {_quote(value)}")
    rest, negative = value, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if not (rest[0] == "." or "0" <= rest[0] <= "9"):
            raise invalid
        whole, rest = _leading_digits(rest)
        fraction = ""
        if rest.startswith("."):
            fraction, rest = _leading_digits(rest[1:])
            if not whole and not fraction:
                raise invalid
        elif not whole:
            raise invalid
        end = 0
        while end < len(rest) and not (rest[end] == "." or "0" <= rest[end] <= "9"):
            end += 1
        if end == 0:
            raise GoParseError(f"time: missing unit in duration {_quote(value)}")
        unit, rest = rest[:end], rest[end:]
        if unit not in _NANOSECONDS_PER_UNIT:
            raise GoParseError(f"time: unknown unit {_quote(unit)} in duration {_quote(value)}")
        scale = _NANOSECONDS_PER_UNIT[unit]
        amount = int(whole or "0") * scale
        if fraction:
            amount += int(fraction) * scale // 10 ** len(fraction)
        total += amount
        if total > _MAX_DURATION + (1 if negative else 0):
            raise invalid
    return -total if negative else total


def to_timedelta(value: str) -> timedelta:
    """A Go duration as a `timedelta`, rounded to whole microseconds (the finest a `timedelta` holds)."""
    return timedelta(microseconds=round(Fraction(parse_duration(value), 1000)))


def format_seconds(seconds: int) -> str:
    """Go's `time.Duration.String()` of whole seconds (`45s`, `5m0s`, `1h2m3s`); the caller rounds."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def human_duration(seconds: float) -> str:
    """apimachinery's `duration.HumanDuration`: the short age kubectl prints (`45s`, `5m3s`, `3h2m`, `12d`)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return f"{minutes}m{whole % 60}s" if whole % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def parse_bool(value: str) -> bool:
    """A boolean as Go's `strconv.ParseBool` reads it (the spellings Go's flag package accepts)."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise GoParseError(f"strconv.ParseBool: parsing {quote(value)}: invalid syntax")


def atoi(value: str) -> int:
    """The integer of a decimal string as Go's `strconv.Atoi` reads it."""
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise GoParseError(f"strconv.Atoi: parsing {_quote(value)}: invalid syntax")
    number = int(value)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise GoParseError(f"strconv.Atoi: parsing {_quote(value)}: value out of range")
    return number


_VERSION = re.compile(r"[\t\n\f\r ]*v?([0-9]+(?:\.[0-9]+)*)(.*)", re.DOTALL)
_UINT64_MAX = (1 << 64) - 1


def parse_generic_version(value: str) -> tuple[int, ...]:
    """The numeric components of a version string, as apimachinery's `version.ParseGeneric` reads it."""
    match = _VERSION.fullmatch(value)
    if match is None:
        raise GoParseError(f"could not parse {_quote(value)} as version")
    components = match.group(1).split(".")
    if len(components) < 2:
        raise GoParseError(f"illegal version string {_quote(value)}")
    if components[0].startswith("0") and components[0] != "0":
        raise GoParseError(
            f"illegal zero-prefixed version component {_quote(components[0])} in {_quote(value)}"
        )
    numbers = []
    for component in components:
        number = int(component)
        if number > _UINT64_MAX:
            raise GoParseError(
                f"illegal non-numeric version component {_quote(component)} in {_quote(value)}: "
                f"strconv.ParseUint: parsing {_quote(component)}: value out of range"
            )
        numbers.append(number)
    return tuple(numbers)


def version_less_than(version: tuple[int, ...], minimum: tuple[int, ...]) -> bool:
    """apimachinery's `Version.LessThan` for generic versions: missing components count as zero."""
    width = max(len(version), len(minimum))
    return version + (0,) * (width - len(version)) < minimum + (0,) * (width - len(minimum))


def load_location(name: str) -> None:
    """Accepts what Go's `time.LoadLocation` accepts (Go embeds tzdata; we use the system's or the
    `tzdata` package's)."""
    if name in ("", "UTC", "Local"):
        return
    if ".." in name or name[0] in "/\\":
        raise GoParseError("time: invalid location name")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise GoParseError(f"unknown time zone {name}") from None
