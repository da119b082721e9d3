"""What the node event forwarder forwards, and how the forwarded Event reads (upstream's kuberay#4978), without
I/O: the filter over a Node's Events, the RayClusters a Node's Ray pods belong to, the forwarded reason and
message, and which occurrence of a source Event is new.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kuberay.api import constants
from kubesemantics.times import parse_time

NODE_KIND = "Node"
# The reason of a forwarded Event whose source Event had none.
FALLBACK_REASON = "NodeEvent"
# events.k8s.io/v1 refuses a longer reason; the note's own limit (1024 bytes) is the recorder's.
REASON_LIMIT = 128
NOTE_LIMIT = 1024


@dataclass(frozen=True)
class EventFilter:
    """Which Node Events are forwarded: each non-empty list must hold the Event's value (an empty list
    allows every value, upstream's rule for all three)."""

    sources: frozenset[str] = frozenset()
    reasons: frozenset[str] = frozenset()
    types: frozenset[str] = frozenset()

    @classmethod
    def of(cls, sources: Iterable[str], reasons: Iterable[str], types: Iterable[str]) -> EventFilter:
        return cls(frozenset(sources), frozenset(reasons), frozenset(types))

    @property
    def configured(self) -> bool:
        return bool(self.sources or self.reasons or self.types)

    def matches(self, event: Mapping[str, Any]) -> bool:
        if (event.get("involvedObject") or {}).get("kind") != NODE_KIND:
            return False
        if self.types and event.get("type") not in self.types:
            return False
        if self.reasons and event.get("reason") not in self.reasons:
            return False
        if self.sources:
            # The legacy source.component and the events.k8s.io reportingController both name the emitter.
            emitters = {(event.get("source") or {}).get("component"), event.get("reportingComponent")}
            if not emitters & self.sources:
                return False
        return True


def event_source(event: Mapping[str, Any]) -> str:
    return str((event.get("source") or {}).get("component") or event.get("reportingComponent") or "")


def forwarded_reason(event: Mapping[str, Any]) -> str:
    """`<reason>/<source>`, so that a reader tells an XID error of the GPU plugin from the kubelet's."""
    reason = str(event.get("reason") or FALLBACK_REASON)
    source = event_source(event)
    return _cut(f"{reason}/{source}" if source else reason, REASON_LIMIT, "")


def forwarded_note(node: str, event: Mapping[str, Any]) -> str:
    reason = str(event.get("reason") or FALLBACK_REASON)
    return _cut(
        f'Node event observed on Node "{node}" (reason: {reason}, source: {event_source(event)}): '
        f"{event.get('message') or ''}",
        NOTE_LIMIT,
        "...",
    )


def _cut(text: str, limit: int, suffix: str) -> str:
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    return encoded[: limit - len(suffix)].decode(errors="ignore") + suffix


def occurrence_count(event: Mapping[str, Any]) -> int:
    """How often the source Event has occurred: its series' count, else its count, else once."""
    series_count = (event.get("series") or {}).get("count") or 0
    if series_count > 0:
        return int(series_count)
    count = event.get("count") or 0
    return int(count) if count > 0 else 1


def last_observed(event: Mapping[str, Any]) -> datetime | None:
    """The latest of lastTimestamp, series.lastObservedTime and eventTime; else firstTimestamp, else the
    object's creation."""
    times = [
        _time(event.get("lastTimestamp")),
        _time((event.get("series") or {}).get("lastObservedTime")),
        _time(event.get("eventTime")),
    ]
    known = [t for t in times if t is not None]
    if known:
        return max(known)
    return _time(event.get("firstTimestamp")) or _time((event.get("metadata") or {}).get("creationTimestamp"))


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def clusters_on_node(pods: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The (namespace, name) of each RayCluster with a pod among `pods`, once each, sorted."""
    found = set()
    for pod in pods:
        metadata = pod.get("metadata") or {}
        cluster = (metadata.get("labels") or {}).get(constants.RAY_CLUSTER_LABEL)
        if cluster:
            found.add((str(metadata.get("namespace") or ""), str(cluster)))
    return sorted(found)


@dataclass(frozen=True)
class Forwarded:
    """The occurrence of a source Event last forwarded: a new UID under the name is a new Event; a higher
    count is the same fault again."""

    uid: str
    count: int

    def supersedes(self, event: Mapping[str, Any]) -> bool:
        """Whether this record already covers `event` (so it is not forwarded again)."""
        uid = (event.get("metadata") or {}).get("uid") or ""
        return uid == self.uid and occurrence_count(event) <= self.count

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Forwarded:
        return cls(str((event.get("metadata") or {}).get("uid") or ""), occurrence_count(event))
