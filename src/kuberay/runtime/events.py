"""Recording Events about objects, aggregated as client-go's recorders do.

Two APIs, as upstream uses both: the manager's recorder writes core/v1 Events with its component as the
source (client-go's `record` package, the RayCluster controller's); `for_controller(name)` gives a
recorder that writes events.k8s.io/v1 Events reported by that controller (client-go's `events` package,
which upstream's RayJob and RayService controllers use, as `rayjob-controller` / `rayservice-controller`).
Both go through the one queue and writer.

`record` never blocks and never fails the caller: Events are queued and written by `run` in the
background (a full queue drops the Event with a log line, as client-go does). An Event identical to one
already written (same object, type, reason, message) bumps that Event's `count` and `lastTimestamp` (its
`series` for events.k8s.io/v1) instead of creating another, so a reconcile loop that repeats itself
produces one Event with a count, not thousands of objects. What was written is remembered for the 4096
most recent Events (client-go's LRU) and at most `REMEMBER_S` since each was last written: an Event not
repeated within ten minutes starts a new object when it comes again. Without the time bound the memory of
Events grew for the first hours of an operator's life, a few hundred bytes per Event about a pod or a job
since gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.resources import EVENT, Resource
from kubesemantics.times import format_micro_time, format_time

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
EVENTS_V1 = Resource("events.k8s.io/v1", "Event", "events")
# client-go's aggregation window (defaultAggregateIntervalInSeconds): how long a written Event is remembered.
REMEMBER_S = 600.0


class Recorder(Protocol):
    """What a reconciler needs of a recorder."""

    def record(
        self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str = ""
    ) -> None: ...


class _Similar(NamedTuple):
    controller: str
    uid: str
    namespace: str
    name: str
    type: str
    reason: str
    message: str


class _Occurrence(NamedTuple):
    obj: Mapping[str, Any]
    type: str
    reason: str
    message: str
    action: str
    at: datetime
    controller: str = ""  # set: an events.k8s.io/v1 Event reported by this controller


class _Written(NamedTuple):
    name: str
    times: int
    at: float  # the clock's monotonic time of the last write


class EventRecorder:
    def __init__(
        self,
        client: Client,
        *,
        component: str,
        instance: str,
        clock: Clock,
        queue_size: int = 1000,
        remembered: int = 4096,
    ):
        self.client = client
        self.component = component
        self.instance = instance
        self._clock = clock
        self._queue: asyncio.Queue[_Occurrence] = asyncio.Queue(queue_size)
        self._written: OrderedDict[_Similar, _Written] = OrderedDict()
        self._remembered = remembered
        self._last_nanos = 0

    def record(self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str = "") -> None:
        """Queues a core/v1 Event about `obj` (any object with apiVersion, kind and metadata)."""
        self._enqueue(_Occurrence(obj, type, reason, message, action, self._clock.now()))

    def for_controller(self, controller: str) -> ControllerRecorder:
        """A recorder of events.k8s.io/v1 Events whose `reportingController` is `controller`."""
        return ControllerRecorder(self, controller)

    def _enqueue(self, occurrence: _Occurrence) -> None:
        try:
            self._queue.put_nowait(occurrence)
        except asyncio.QueueFull:
            log.warning(
                "event queue full; dropping %s event %s: %s",
                occurrence.type,
                occurrence.reason,
                occurrence.message,
            )

    async def run(self) -> None:
        while True:
            occurrence = await self._queue.get()
            try:
                await self._write(occurrence)
            except errors.KubeError as e:
                log.warning("failed to write event %s: %s", occurrence.reason, e)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Waits until every queued Event is written (needs `run` running)."""
        await self._queue.join()

    async def _write(self, occurrence: _Occurrence) -> None:
        obj, type, reason, message, action, at, controller = occurrence
        message = _within_limit(message)
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        similar = _Similar(
            controller,
            metadata.get("uid") or "",
            namespace,
            metadata.get("name") or "",
            type,
            reason,
            message,
        )
        resource = EVENTS_V1 if controller else EVENT
        previous = self._written.get(similar)
        if previous is not None and previous.at >= self._clock.monotonic() - REMEMBER_S:
            times = previous.times + 1
            if controller:
                patch: dict[str, Any] = {
                    "series": {"count": times, "lastObservedTime": format_micro_time(at)}
                }
            else:
                patch = {"count": times, "lastTimestamp": format_time(at)}
            try:
                await self.client.patch(resource, previous.name, patch, namespace)
                self._remember(similar, _Written(previous.name, times, self._clock.monotonic()))
                return
            except errors.NotFoundError:
                pass  # the Event expired; write a new one
        # client-go names Events <object>.<unix nanoseconds in hex>; strictly increasing keeps them unique.
        self._last_nanos = max(self._last_nanos + 1, int(at.timestamp() * 1e9))
        name = f"{similar.name}.{self._last_nanos:x}"
        about = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": similar.name,
            "namespace": metadata.get("namespace", ""),
            "uid": similar.uid,
            "resourceVersion": metadata.get("resourceVersion", ""),
        }
        event: dict[str, Any]
        if controller:
            event = {
                "metadata": {"name": name, "namespace": namespace},
                "eventTime": format_micro_time(at),
                "regarding": about,
                "type": type,
                "reason": reason,
                "note": message,
                "action": action,
                "reportingController": controller,
                "reportingInstance": self.instance,
            }
        else:
            event = {
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": about,
                "type": type,
                "reason": reason,
                "message": message,
                "action": action,
                "source": {"component": self.component},
                "reportingComponent": self.component,
                "reportingInstance": self.instance,
                "firstTimestamp": format_time(at),
                "lastTimestamp": format_time(at),
                "count": 1,
            }
        await self.client.create(resource, event, namespace)
        self._remember(similar, _Written(name, 1, self._clock.monotonic()))

    def _remember(self, similar: _Similar, written: _Written) -> None:
        self._written[similar] = written
        self._written.move_to_end(similar)
        while len(self._written) > self._remembered:
            self._written.popitem(last=False)
        # Least recently written first: forget from the front what has not been written for REMEMBER_S.
        horizon = written.at - REMEMBER_S
        while next(iter(self._written.values())).at < horizon:
            self._written.popitem(last=False)


class ControllerRecorder:
    """Records events.k8s.io/v1 Events reported by one controller, through its parent's queue and writer."""

    def __init__(self, parent: EventRecorder, controller: str) -> None:
        self._parent = parent
        self.controller = controller

    def record(self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str = "") -> None:
        self._parent._enqueue(
            _Occurrence(obj, type, reason, message, action, self._parent._clock.now(), self.controller)
        )


# kube-apiserver refuses an Event whose message (events.k8s.io's `note`) is over 1024 bytes; a Serve
# application's import error, with its traceback, is longer. The Event keeps its start, marked as cut.
MESSAGE_LIMIT = 1024
_CUT = " ..."


def _within_limit(message: str) -> str:
    encoded = message.encode()
    if len(encoded) <= MESSAGE_LIMIT:
        return message
    return encoded[: MESSAGE_LIMIT - len(_CUT)].decode(errors="ignore") + _CUT
