"""`OwningController`: the shape the workload controllers share.

Each indexes one owner kind and its dependents (`ownership.Ownership`), claims the dependents on every
reconcile (adopting orphans that match the selector), leaves an owner being deleted to the garbage
collector, and writes status only when it changed. StatefulSets and DaemonSets also keep ControllerRevisions
(`history.History`).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Iterable
from typing import Any

from localkube.controllers import podstate
from localkube.controllers.api import ControllerApi
from localkube.controllers.events import event_object
from localkube.controllers.history import REVISIONS_PREFIX, History
from localkube.controllers.ownership import Ownership, key_of
from localkube.server.errors import ApiError
from localkube.storage import Event, Store

log = logging.getLogger(__name__)


class OwningController:
    """The common shape of the workload controllers: index an owner kind and its dependents, claim the
    dependents on every reconcile, and leave an owner being deleted to the garbage collector.

    Subclasses name the kind (`owner_prefix`, `owner_kind`, `dependent_prefix`) and implement `sync`."""

    name: str
    owner_prefix: str
    owner_kind: str
    dependent_prefix: str = "/registry/core/pods/"
    # StatefulSets and DaemonSets keep their templates as ControllerRevisions.
    keeps_history: bool = False

    def __init__(
        self, store: Store, api: ControllerApi, clock: Callable[[], datetime.datetime] = podstate.now
    ) -> None:
        self._store = store
        self._api = api
        self._clock = clock
        self._owned = Ownership(store, self.owner_prefix, self.owner_kind, self.dependent_prefix)
        self._history = History(store, self.owner_prefix, self.owner_kind) if self.keeps_history else None

    @property
    def prefixes(self) -> tuple[str, ...]:
        return (*self._owned.prefixes, *((REVISIONS_PREFIX,) if self._history else ()))

    def observe(self, event: Event) -> Iterable[str]:
        if self._history is not None:
            concerned = self._history.observe(event)
            if concerned is not None:
                return concerned
        return self._owned.observe(event)

    def reconcile(self, key: str) -> float | None:
        owner = self._store.get(key)
        if owner is None:
            return None
        dependents = self._owned.claim(self._api, owner)
        if owner["metadata"].get("deletionTimestamp"):
            return None
        return self.sync(key, owner, dependents)

    def sync(self, key: str, owner: dict[str, Any], dependents: list[dict[str, Any]]) -> float | None:
        """Brings one live owner's dependents and status to what its spec asks."""
        raise NotImplementedError

    def _event(self, about: dict[str, Any], reason: str, message: str, kind: str = "Normal") -> None:
        try:
            event = event_object(self.name, about, reason, message, self._clock(), kind)
            self._api.create("", "events", about["metadata"]["namespace"], event)
        except ApiError:
            # An event that cannot be written (its namespace is going) is no reason to fail the reconcile.
            log.debug("%s: could not record %s about %s", self.name, reason, about["metadata"]["name"])

    def _create_pod(self, owner: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any] | None:
        """Creates one of `owner`'s pods and records it as upstream does (`SuccessfulCreate`, or a
        `FailedCreate` Warning before the error goes to the runner's retry). None when the namespace is
        being deleted: nothing may be made there, and nothing needs to be (upstream skips it too)."""
        try:
            created = self._owned.note(self._api.create("", "pods", owner["metadata"]["namespace"], pod))
        except ApiError as err:
            if err.code == 403 and "being terminated" in err.message:
                return None
            self._event(owner, "FailedCreate", f"Error creating: {err.message}", "Warning")
            raise
        name = created["metadata"]["name"]
        self._event(owner, "SuccessfulCreate", self._pod_message("create", "Created", name, owner))
        return created

    def _delete_pod(self, owner: dict[str, Any], pod: dict[str, Any]) -> None:
        """Deletes one of `owner`'s pods and records it as upstream does (`SuccessfulDelete`)."""
        self._api.delete(key_of(self.dependent_prefix, pod))
        name = pod["metadata"]["name"]
        self._event(owner, "SuccessfulDelete", self._pod_message("delete", "Deleted", name, owner))

    def _pod_message(self, verb: str, past: str, pod: str, owner: dict[str, Any]) -> str:
        # The StatefulSet controller words its pod events its own way.
        if self.owner_kind == "StatefulSet":
            return f"{verb} Pod {pod} in StatefulSet {owner['metadata']['name']} successful"
        return f"{past} pod: {pod}"

    def _record(self, owner: dict[str, Any], name: str, hash_value: str) -> None:
        assert self._history is not None
        self._history.record(self._api, owner, name, hash_value)

    def _prune(self, owner: dict[str, Any], in_use: set[str]) -> None:
        assert self._history is not None
        self._history.prune(self._api, owner, in_use)

    def _publish(
        self, key: str, owner: dict[str, Any], status: dict[str, Any], waits: Iterable[float | None]
    ) -> float | None:
        """Writes `status` if it changed; returns when the next pod becomes available (from `waits`, each
        pod's `available_in`), when the status will change again by itself."""
        if status != (owner.get("status") or {}):
            self._api.update_status(key, {**owner, "status": status})
        pending = [wait for wait in waits if wait]
        return min(pending) if pending else None
