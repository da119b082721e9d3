"""events.k8s.io/v1 Events as views of the core/v1 Events they are stored as, as on a real server.

Both APIs serve the same objects: an Event written through either is read through both. The stored form
is core/v1; the events.k8s.io/v1 form renames fields (`regarding` for `involvedObject`, `note` for
`message`, `reportingController` for `reportingComponent`, and the `deprecated*` fields for the core
source, count and timestamps). The renames are their own inverse, so one table drives both directions.
"""

from __future__ import annotations

from typing import Any

# core/v1 field -> events.k8s.io/v1 field
_RENAMES = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
_REVERSED = {served: stored for stored, served in _RENAMES.items()}


def _renamed(obj: dict[str, Any], renames: dict[str, str], api_version: str) -> dict[str, Any]:
    out = {renames.get(key, key): value for key, value in obj.items()}
    out["apiVersion"] = api_version
    out["kind"] = "Event"
    return out


def to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event in its stored core/v1 form."""
    return _renamed(obj, _REVERSED, "v1")


def from_core(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 serves it."""
    return _renamed(obj, _RENAMES, "events.k8s.io/v1")
