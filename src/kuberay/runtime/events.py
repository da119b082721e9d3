"""Recording core/v1 Events about objects, aggregated as client-go's recorder does.

`record` never blocks and never fails the caller: Events are queued and written by `run` in the
background (a full queue drops the Event with a log line, as client-go does). An Event identical to one
already written (same object, type, reason, message) bumps that Event's `count` and `lastTimestamp`
instead of creating another, so a reconcile loop that repeats itself produces one Event with a count, not
thousands of objects.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.resources import EVENT

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"


class _Similar(NamedTuple):
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


class _Written(NamedTuple):
    name: str
    times: int


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
        """Queues an Event about `obj` (any object with apiVersion, kind and metadata)."""
        try:
            self._queue.put_nowait(_Occurrence(obj, type, reason, message, action, self._clock.now()))
        except asyncio.QueueFull:
            log.warning("event queue full; dropping %s event %s: %s", type, reason, message)

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
        obj, type, reason, message, action, at = occurrence
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        similar = _Similar(
            metadata.get("uid") or "", namespace, metadata.get("name") or "", type, reason, message
        )
        timestamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        previous = self._written.get(similar)
        if previous is not None:
            try:
                patch = {"count": previous.times + 1, "lastTimestamp": timestamp}
                await self.client.patch(EVENT, previous.name, patch, namespace)
                self._remember(similar, _Written(previous.name, previous.times + 1))
                return
            except errors.NotFound:
                pass  # the Event expired; write a new one
        # client-go names Events <object>.<unix nanoseconds in hex>; strictly increasing keeps them unique.
        self._last_nanos = max(self._last_nanos + 1, int(at.timestamp() * 1e9))
        name = f"{similar.name}.{self._last_nanos:x}"
        event = {
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": similar.name,
                "namespace": metadata.get("namespace", ""),
                "uid": similar.uid,
                "resourceVersion": metadata.get("resourceVersion", ""),
            },
            "type": type,
            "reason": reason,
            "message": message,
            "action": action,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
        }
        await self.client.create(EVENT, event, namespace)
        self._remember(similar, _Written(name, 1))

    def _remember(self, similar: _Similar, written: _Written) -> None:
        self._written[similar] = written
        self._written.move_to_end(similar)
        while len(self._written) > self._remembered:
            self._written.popitem(last=False)
