"""Scale expectations: remembering the pods this process just created or deleted until the cache agrees.

A reconcile that creates a pod and runs again before the pod's watch event arrives would see too few
pods and create another; one that deletes would see it still there and delete again. Before counting, a
reconciler asks `satisfied(owner, group)`: every pod it expects to have been created must be in the cache
(or `timeout` must have passed, in case the create never became visible), and every pod it expects
deleted must be gone from it. Satisfied records are dropped. Records live in memory only: after a restart
the cache is freshly listed, so there is nothing to wait for.

The timeout runs only while the cache is connected to the server (`connected_since`, from the pods'
informer): while the API server is down, or the watch is being re-established, a created pod cannot reach
the cache however long one waits, and giving up on it then would create it twice. So a create waits for
`timeout` after the later of its record and the cache's reconnection. A create sent without an answer
(`OutcomeUnknown`) is recorded by the name it was sent with, as the server may have made it.
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
    action: ScaleAction
    recorded_at: float


Lookup = Callable[[ObjectKey], Mapping[str, Any] | None]
ConnectedSince = Callable[[], float | None]


class ScaleExpectations:
    def __init__(
        self,
        lookup: Lookup,
        clock: Clock,
        *,
        connected_since: ConnectedSince,
        timeout: float = 30.0,
    ) -> None:
        self._lookup = lookup
        self._clock = clock
        self._timeout = timeout
        self._connected_since = connected_since
        # owner -> group -> pod -> record, so that a check reads only its own records: with thousands of
        # clusters scaling at once, scanning every record on each check made a reconcile cost O(all pods).
        self._records: dict[ObjectKey, dict[str, dict[ObjectKey, _Record]]] = {}
        # pod -> (owner, group) of its record: a newer record for a pod replaces the old one.
        self._place: dict[ObjectKey, tuple[ObjectKey, str]] = {}

    def expect(self, owner: ObjectKey, group: str, pod_name: str, action: ScaleAction) -> None:
        pod = ObjectKey(owner.namespace, pod_name)
        if pod in self._place:
            self._drop(pod)
        self._place[pod] = (owner, group)
        groups = self._records.setdefault(owner, {})
        groups.setdefault(group, {})[pod] = _Record(action, self._clock.monotonic())

    def satisfied(self, owner: ObjectKey, group: str) -> bool:
        records = self._records.get(owner, {}).get(group)
        if not records:
            return True
        now = self._clock.monotonic()
        connected = self._connected_since()
        for pod, record in list(records.items()):
            present = self._lookup(pod) is not None
            if record.action is ScaleAction.CREATE:
                waited = None if connected is None else now - max(record.recorded_at, connected)
                done = present or (waited is not None and waited >= self._timeout)
            else:
                done = not present
            if not done:
                return False
            self._drop(pod)
        return True

    def forget(self, owner: ObjectKey, group: str | None = None) -> None:
        """Drops the records of an owner (of one group, or all of them)."""
        groups = self._records.get(owner, {})
        for name in [group] if group is not None else list(groups):
            for pod in list(groups.get(name, ())):
                self._drop(pod)

    def _drop(self, pod: ObjectKey) -> None:
        owner, group = self._place.pop(pod)
        groups = self._records[owner]
        del groups[group][pod]
        if not groups[group]:
            del groups[group]
            if not groups:
                del self._records[owner]
