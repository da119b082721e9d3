"""ControllerRevisions: the template history of StatefulSets and DaemonSets, as upstream keeps it.

Each distinct template an owner has had is one `apps/v1` ControllerRevision named `<owner>-<hash>`,
controlled by the owner, labelled with the template's labels plus `controller-revision-hash`, holding the
template as the strategic-merge patch that restores it (`{"spec": {"template": {..., "$patch": "replace"}}}`)
and a `revision` number. Returning to an earlier template (`kubectl rollout undo`) gives its revision the next
number instead of making a new one. Beyond `revisionHistoryLimit`, the oldest revisions no pod uses go.
This is what `kubectl rollout history` and `kubectl rollout undo` read for these kinds.
"""

from __future__ import annotations

import copy
from typing import Any

from localkube.controllers.api import ControllerApi
from localkube.controllers.ownership import REVISION_LABEL, Ownership, controller_reference, key_of
from localkube.server.errors import ApiError
from localkube.storage import Event, Store

REVISIONS_PREFIX = "/registry/apps/controllerrevisions/"


class History:
    def __init__(self, store: Store, owner_prefix: str, owner_kind: str) -> None:
        self._store = store
        self._revisions = Ownership(store, owner_prefix, owner_kind, REVISIONS_PREFIX)

    def observe(self, event: Event) -> list[str] | None:
        """Indexes owner and revision events; returns the owner keys a revision event concerns, or None
        for an event that is not about a revision (the caller's own index handles it too)."""
        concerned = self._revisions.observe(event)
        return concerned if event.key.startswith(REVISIONS_PREFIX) else None

    def record(self, api: ControllerApi, owner: dict[str, Any], name: str, hash_value: str) -> None:
        """Makes sure the owner's current template is its newest revision, named `name`."""
        revisions = [
            r
            for r in self._revisions.owned(owner["metadata"]["uid"])
            if not r["metadata"].get("deletionTimestamp")
        ]
        newest = max((int(r.get("revision") or 0) for r in revisions), default=0)
        existing = next((r for r in revisions if r["metadata"]["name"] == name), None)
        if existing is not None:
            if int(existing.get("revision") or 0) < newest:
                api.update(key_of(REVISIONS_PREFIX, existing), {**existing, "revision": newest + 1})
            return
        template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
        template["$patch"] = "replace"
        labels = dict(((owner["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {})
        revision = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": owner["metadata"]["namespace"],
                "labels": {**labels, REVISION_LABEL: hash_value},
                "ownerReferences": [controller_reference(owner)],
            },
            "data": {"spec": {"template": template}},
            "revision": newest + 1,
        }
        try:
            api.create("apps", "controllerrevisions", owner["metadata"]["namespace"], revision)
        except ApiError as err:
            # Made by an earlier pass whose event has not arrived yet.
            if err.code != 409:
                raise

    def template(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod template a revision restores; None when the revision is gone."""
        revision = self._store.get(f"{REVISIONS_PREFIX}{namespace}/{name}")
        if revision is None:
            return None
        template = dict(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
        template.pop("$patch", None)
        return template

    def prune(self, api: ControllerApi, owner: dict[str, Any], in_use: set[str]) -> None:
        """Deletes the oldest revisions beyond `revisionHistoryLimit` whose names are not `in_use`."""
        limit = int((owner.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = sorted(
            (
                r
                for r in self._revisions.owned(owner["metadata"]["uid"])
                if r["metadata"]["name"] not in in_use
            ),
            key=lambda r: int(r.get("revision") or 0),
        )
        for revision in idle[: max(len(idle) - limit, 0)]:
            api.delete(key_of(REVISIONS_PREFIX, revision))
