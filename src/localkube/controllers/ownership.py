"""Controller references between a workload and the objects it manages, and adoption by selector.

`Ownership` indexes, from watch events, the owners of one kind (Deployments, ReplicaSets, StatefulSets,
DaemonSets) and the dependents of one resource (ReplicaSets or pods): which dependents each owner controls
(an `ownerReferences` entry with `controller: true` and the owner's uid) and which have no controller at
all. `claim` then does what upstream's `ControllerRefManager` does on every sync: a dependent without a
controller whose labels match the owner's selector is adopted (its template-less labels are left alone);
an owned dependent whose labels no longer match is released. An owner being deleted adopts nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from kubesemantics.selectors import label_selector_matches
from localkube.controllers.api import ControllerApi
from localkube.server.errors import ApiError
from localkube.storage import Event, Store

REVISION_LABEL = "controller-revision-hash"


def _controller_reference_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    references = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in references if r.get("controller")), None)


def controller_uid(obj: dict[str, Any]) -> str | None:
    reference = _controller_reference_of(obj)
    return str(reference.get("uid") or "") or None if reference is not None else None


def controller_reference(owner: dict[str, Any]) -> dict[str, Any]:
    """The `ownerReferences` entry that makes `owner` its dependent's controller."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def selects(selector: dict[str, Any] | None, obj: dict[str, Any]) -> bool:
    """Whether a metav1.LabelSelector selects `obj`; an empty or missing selector selects nothing, as
    for a workload (whose API validation requires a non-empty one)."""
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    return label_selector_matches(selector, (obj.get("metadata") or {}).get("labels") or {})


def key_of(prefix: str, obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{prefix}{metadata['namespace']}/{metadata['name']}"


class Ownership:
    """Owners under `owner_prefix` of kind `owner_kind`; their dependents under `dependent_prefix`."""

    def __init__(self, store: Store, owner_prefix: str, owner_kind: str, dependent_prefix: str) -> None:
        self._store = store
        self.owner_prefix = owner_prefix
        self.owner_kind = owner_kind
        self.dependent_prefix = dependent_prefix
        self._owner_key: dict[str, str] = {}  # owner uid -> key
        self._owners_in: dict[str, set[str]] = {}  # namespace -> owner keys
        self._owned: dict[str, set[str]] = {}  # owner uid -> dependent keys
        self._controller_of: dict[str, str] = {}  # dependent key -> controller uid
        self._orphans: dict[str, set[str]] = {}  # namespace -> dependent keys with no controller
        self._orphan_labels: dict[str, dict[str, str]] = {}  # orphan key -> its labels when last seen

    @property
    def prefixes(self) -> tuple[str, str]:
        return (self.owner_prefix, self.dependent_prefix)

    def owner_key(self, uid: str) -> str | None:
        return self._owner_key.get(uid)

    def observe(self, event: Event) -> list[str]:
        """Updates the index; returns the owner keys the event concerns."""
        metadata = event.object.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        if event.key.startswith(self.owner_prefix):
            owners = self._owners_in.setdefault(namespace, set())
            if event.type == "DELETED":
                self._owner_key.pop(str(metadata.get("uid") or ""), None)
                owners.discard(event.key)
                return []
            self._owner_key[metadata["uid"]] = event.key
            owners.add(event.key)
            return [event.key]
        previous = self._controller_of.pop(event.key, None)
        if previous is not None:
            self._owned.get(previous, set()).discard(event.key)
        orphans = self._orphans.setdefault(namespace, set())
        orphans.discard(event.key)
        seen_labels = self._orphan_labels.pop(event.key, None)
        concerned = [self._owner_key[previous]] if previous in self._owner_key else []
        if event.type == "DELETED":
            return concerned
        reference = _controller_reference_of(event.object)
        if reference is None:
            orphans.add(event.key)
            labels = dict(metadata.get("labels") or {})
            self._orphan_labels[event.key] = labels
            if labels == seen_labels:
                return concerned  # a status change: no owner's adoption decision changes with it
            # New, released or relabelled: any owner in the namespace may want to adopt it.
            return [*concerned, *sorted(self._owners_in.get(namespace, ()))]
        if reference.get("kind") != self.owner_kind:
            # Controlled by another kind (a Job, a RayCluster): none of this index's business.
            return concerned
        uid = str(reference.get("uid") or "")
        self._controller_of[event.key] = uid
        self._owned.setdefault(uid, set()).add(event.key)
        if uid in self._owner_key and uid != previous:
            concerned.append(self._owner_key[uid])
        return concerned

    def note(self, dependent: dict[str, Any]) -> dict[str, Any]:
        """Indexes a dependent this controller itself just wrote, before its watch event arrives, so that
        a reconcile in between does not make or adopt it twice (upstream's "expectations")."""
        self.observe(Event("MODIFIED", key_of(self.dependent_prefix, dependent), 0, b"", dependent))
        return dependent

    def owned(self, owner_uid: str) -> list[dict[str, Any]]:
        """The dependents `owner_uid` controls, fresh from the store, by name."""
        return self._read(self._owned.get(owner_uid, ()))

    def _read(self, keys: Iterable[str]) -> list[dict[str, Any]]:
        objects = (self._store.get(key) for key in sorted(keys))
        return [obj for obj in objects if obj is not None]

    def claim(self, api: ControllerApi, owner: dict[str, Any]) -> list[dict[str, Any]]:
        """Adopts matching orphans and releases non-matching dependents; returns the dependents owned now."""
        metadata = owner["metadata"]
        selector = (owner.get("spec") or {}).get("selector")
        claimed: list[dict[str, Any]] = []
        # The index may lag the store: each dependent is judged by its stored controller reference.
        for dependent in self.owned(metadata["uid"]):
            if controller_uid(dependent) != metadata["uid"]:
                continue
            if selects(selector, dependent) or dependent["metadata"].get("deletionTimestamp"):
                claimed.append(dependent)
            elif not metadata.get("deletionTimestamp"):
                references = dependent["metadata"].get("ownerReferences") or []
                kept = [r for r in references if r.get("uid") != metadata["uid"]]
                self._set_references(api, dependent, kept)
        if metadata.get("deletionTimestamp"):
            return claimed
        for dependent in self._read(self._orphans.get(metadata["namespace"], ())):
            if controller_uid(dependent) is not None:
                continue
            if dependent["metadata"].get("deletionTimestamp") or not selects(selector, dependent):
                continue
            references = [*(dependent["metadata"].get("ownerReferences") or []), controller_reference(owner)]
            adopted = self._set_references(api, dependent, references)
            if adopted is not None:
                claimed.append(adopted)
        return sorted(claimed, key=lambda obj: str(obj["metadata"]["name"]))

    def _set_references(
        self, api: ControllerApi, dependent: dict[str, Any], references: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        updated = {**dependent, "metadata": {**dependent["metadata"], "ownerReferences": references}}
        if not references:
            del updated["metadata"]["ownerReferences"]
        try:
            return self.note(api.update(key_of(self.dependent_prefix, dependent), updated))
        except ApiError as err:
            # Someone else changed or deleted it first: the event that follows brings it back here.
            if err.code in (404, 409):
                return None
            raise


def pod_from_template(
    owner: dict[str, Any],
    *,
    labels: dict[str, str] | None = None,
    name: str | None = None,
    template: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod of `owner`'s `spec.template` (or of an earlier `template`), controlled by `owner`: named
    `name`, or `<owner>-<random>`."""
    if template is None:
        template = (owner.get("spec") or {}).get("template") or {}
    metadata = copy.deepcopy(template.get("metadata") or {})
    for server_owned in ("creationTimestamp", "generation", "uid", "resourceVersion"):
        metadata.pop(server_owned, None)
    metadata["labels"] = {**(metadata.get("labels") or {}), **(labels or {})}
    metadata["namespace"] = owner["metadata"]["namespace"]
    metadata["ownerReferences"] = [controller_reference(owner)]
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = f"{owner['metadata']['name']}-"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def revision_label(pod: dict[str, Any]) -> str:
    """The `controller-revision-hash` a StatefulSet's or DaemonSet's pod was made from."""
    return str((pod["metadata"].get("labels") or {}).get(REVISION_LABEL, ""))
