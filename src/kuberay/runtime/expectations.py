"""Scale expectations: remembering the pods this process just created or deleted until the cache agrees.

A reconcile that creates a pod and runs again before the pod's watch event arrives would see too few
pods and create another; one that deletes would see it still there and delete again. Before counting, a
reconciler asks `satisfied(owner, group)`: every pod it expects to have been created must be in the cache
(or `timeout` must have passed, in case the create never became visible), and every pod it expects
deleted must be gone from it. Satisfied records are dropped. Records live in memory only: after a restart
the cache is freshly listed, so there is nothing to wait for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, NamedTuple

from kuberay.runtime.clock import Clock
from kuberay.runtime.resources import ObjectKey


class ScaleAction(StrEnum):
    CREATE = "create"
    DELETE = "delete"


class _Record(NamedTuple):
    owner: ObjectKey
    group: str
    action: ScaleAction
    recorded_at: float


Lookup = Callable[[ObjectKey], Mapping[str, Any] | None]


class ScaleExpectations:
    def __init__(self, lookup: Lookup, clock: Clock, *, timeout: float = 30.0) -> None:
        self._lookup = lookup
        self._clock = clock
        self._timeout = timeout
        self._records: dict[ObjectKey, _Record] = {}  # by pod; a newer record for a pod replaces the old

    def expect(self, owner: ObjectKey, group: str, pod_name: str, action: ScaleAction) -> None:
        self._records[ObjectKey(owner.namespace, pod_name)] = _Record(
            owner, group, action, self._clock.monotonic()
        )

    def satisfied(self, owner: ObjectKey, group: str) -> bool:
        now = self._clock.monotonic()
        for pod, record in list(self._records.items()):
            if record.owner != owner or record.group != group:
                continue
            present = self._lookup(pod) is not None
            if record.action is ScaleAction.CREATE:
                done = present or now - record.recorded_at >= self._timeout
            else:
                done = not present
            if not done:
                return False
            del self._records[pod]
        return True

    def forget(self, owner: ObjectKey, group: str | None = None) -> None:
        """Drops the records of an owner (of one group, or all of them)."""
        for pod, record in list(self._records.items()):
            if record.owner == owner and (group is None or record.group == group):
                del self._records[pod]
