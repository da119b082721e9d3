"""The garbage collector: deletes objects whose owners are gone, and carries out foreground and orphan
deletions.

It watches every stored object and keeps two indexes: the key of every live uid, and the dependents of
every owner uid (from `metadata.ownerReferences`). Then, as in Kubernetes:
- a dependent none of whose owners exists any more is deleted (in the background); one that keeps at least
  one owner only loses its dangling references;
- an owner being deleted with the `orphan` finalizer has that reference removed from each dependent, then
  the finalizer removed;
- an owner being deleted with the `foregroundDeletion` finalizer has every dependent deleted (in the
  foreground too), and loses the finalizer once no dependent with `blockOwnerDeletion: true` remains.
An owner is matched by uid, never by name: a new object with an old name owns nothing of its
predecessor's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from localkube.controllers.api import ControllerApi
from localkube.storage import Event, Store

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"


class GarbageCollector:
    name = "garbage-collector"
    prefixes = ("/registry/",)

    def __init__(self, store: Store, api: ControllerApi) -> None:
        self._store = store
        self._api = api
        self._key_of_uid: dict[str, str] = {}
        self._owners_of: dict[str, tuple[str, ...]] = {}  # dependent key -> owner uids
        self._dependents: dict[str, set[str]] = {}  # owner uid -> dependent keys

    def observe(self, event: Event) -> Iterable[str]:
        obj = event.object
        metadata = obj.get("metadata") or {}
        uid = metadata.get("uid")
        key = event.key
        previous_owners = self._owners_of.pop(key, ())
        for owner in previous_owners:
            self._dependents.get(owner, set()).discard(key)
        if event.type == "DELETED":
            if uid:
                self._key_of_uid.pop(uid, None)
            # The dependents lost an owner; owners waiting in the foreground lost a dependent.
            waiting_owners = [self._key_of_uid[o] for o in previous_owners if o in self._key_of_uid]
            return [*self._dependents.get(uid or "", ()), *waiting_owners]
        if uid:
            self._key_of_uid[uid] = key
        owners = tuple(ref["uid"] for ref in metadata.get("ownerReferences") or [] if ref.get("uid"))
        if owners:
            self._owners_of[key] = owners
            for owner in owners:
                self._dependents.setdefault(owner, set()).add(key)
        # A dependent whose owners all live needs nothing (an owner's deletion brings it back here).
        wanted = [key] if any(owner not in self._key_of_uid for owner in owners) else []
        finalizers = metadata.get("finalizers") or []
        if metadata.get("deletionTimestamp") and (ORPHAN in finalizers or FOREGROUND in finalizers):
            wanted.append(key)
        # A dependent that started or finished deleting may release an owner waiting on it.
        if metadata.get("deletionTimestamp"):
            wanted += [self._key_of_uid[o] for o in owners if o in self._key_of_uid]
        return wanted

    def reconcile(self, key: str) -> float | None:
        obj = self._store.get(key)
        if obj is None:
            return None
        metadata = obj["metadata"]
        finalizers = metadata.get("finalizers") or []
        if metadata.get("deletionTimestamp") and ORPHAN in finalizers:
            self._orphan_dependents(metadata["uid"])
            self._remove_finalizer(key, ORPHAN)
            return None
        if metadata.get("deletionTimestamp") and FOREGROUND in finalizers:
            self._delete_dependents_in_foreground(key, metadata["uid"])
            return None
        self._collect_if_orphaned(key, obj)
        return None

    def _live(self, uid: str) -> bool:
        return uid in self._key_of_uid

    def _collect_if_orphaned(self, key: str, obj: dict[str, Any]) -> None:
        references = obj["metadata"].get("ownerReferences") or []
        if not references:
            return
        alive = [ref for ref in references if self._live(ref.get("uid", ""))]
        if not alive:
            if not obj["metadata"].get("deletionTimestamp"):
                self._api.delete(key, "Background")
        elif len(alive) < len(references):
            obj["metadata"]["ownerReferences"] = alive
            self._api.update(key, obj)

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dependent_key in sorted(self._dependents.get(owner_uid, ())):
            dependent = self._store.get(dependent_key)
            if dependent is None:
                continue
            references = dependent["metadata"].get("ownerReferences") or []
            dependent["metadata"]["ownerReferences"] = [
                ref for ref in references if ref.get("uid") != owner_uid
            ]
            if not dependent["metadata"]["ownerReferences"]:
                del dependent["metadata"]["ownerReferences"]
            self._api.update(dependent_key, dependent)

    def _delete_dependents_in_foreground(self, owner_key: str, owner_uid: str) -> None:
        blocking = False
        for dependent_key in sorted(self._dependents.get(owner_uid, ())):
            dependent = self._store.get(dependent_key)
            if dependent is None:
                continue
            if not dependent["metadata"].get("deletionTimestamp"):
                self._api.delete(dependent_key, "Foreground")
            references = dependent["metadata"].get("ownerReferences") or []
            reference: dict[str, Any] = next((r for r in references if r.get("uid") == owner_uid), {})
            if reference.get("blockOwnerDeletion") and self._store.get(dependent_key) is not None:
                blocking = True
        if not blocking:
            self._remove_finalizer(owner_key, FOREGROUND)

    def _remove_finalizer(self, key: str, finalizer: str) -> None:
        obj = self._store.get(key)
        if obj is None:
            return
        obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        self._api.update(key, obj)
