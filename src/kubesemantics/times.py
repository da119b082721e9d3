"""Times as Kubernetes writes and reads them on the wire.

`metav1.Time` is RFC 3339 in whole seconds, in UTC (`2026-01-02T03:04:05Z`): what the API server stores in
`creationTimestamp`, `deletionTimestamp`, condition transitions and most status times. `metav1.MicroTime`
keeps microseconds (`2026-01-02T03:04:05.123456Z`): Leases, `events.k8s.io` Events, audit records.
`parse_time` reads either, and any RFC 3339 date-time (a fraction of any length, `Z` or an offset), as
`Time.UnmarshalJSON` does; a zone-less form, which go-openapi's `strfmt` also accepts, reads as UTC.

`go_string` is Go's `time.Time.String()` in UTC, the text upstream prints where it formats a time with `%v`.
Everything is pure: callers pass the moment (a runtime's clock, or `datetime.now(UTC)`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?")


# The last second formatted and its text: a busy localkube stamps thousands of writes in one second, and
# strftime cost ten times the lookup (1.7 % of its CPU).
_last_second: tuple[float, str] = (float("nan"), "")


def format_time(moment: datetime) -> str:
    """A metav1.Time: RFC 3339, whole seconds, UTC."""
    global _last_second
    second, cached = moment.timestamp() // 1, _last_second
    if cached[0] != second:
        cached = _last_second = (second, moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return cached[1]


def format_micro_time(moment: datetime) -> str:
    """A metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    """An RFC 3339 date-time as an aware datetime (microseconds kept, finer digits dropped); ValueError
    otherwise."""
    if not _RFC3339.fullmatch(text):
        raise ValueError(f"not an RFC 3339 date-time: {text!r}")
    parsed = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def go_string(moment: datetime) -> str:
    """Go's `time.Time.String()` of a UTC time: `2006-01-02 15:04:05.999999999 +0000 UTC`, the fraction
    without its trailing zeros (none for a whole second)."""
    utc = moment.astimezone(UTC)
    fraction = f"{utc.microsecond:06d}".rstrip("0")
    return utc.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "") + " +0000 UTC"
