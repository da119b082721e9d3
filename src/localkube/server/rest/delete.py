"""The delete verbs: preconditions; finalizers (and the propagation policy's `foregroundDeletion`/`orphan`)
turn a delete into setting `deletionTimestamp`; the object goes once its last finalizer is removed. Pods
bound to a node are deleted gracefully (the node agent finishes the deletion). Deleting a namespace deletes
its contents at once; if finalizers hold some, the namespace stays Terminating and goes with the last.
Removing a CRD removes its objects. deletecollection deletes what a list selects."""

from __future__ import annotations

import datetime
from typing import Any

from kubesemantics import times
from kubesemantics.status import status_body
from localkube.server import builtin, errors
from localkube.server.errors import ApiError
from localkube.server.registry import ResourceType
from localkube.server.rest.common import Core, Query, clone, is_dry_run, is_namespace
from localkube.server.rest.read import Reads
from localkube.storage import Conflict

# The kinds whose registry answers a delete with the object deleted (ReturnDeletedObject); every other
# kind, custom resources among them, answers with a Success Status naming it.
_RETURN_DELETED_OBJECT = frozenset(
    {
        ("", "pods"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "namespaces"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("", "resourcequotas"),
        ("", "podtemplates"),
        *(
            ("storage.k8s.io", plural)
            for plural in (
                "storageclasses",
                "csidrivers",
                "csinodes",
                "volumeattachments",
                "volumeattributesclasses",
            )
        ),
        *(
            ("resource.k8s.io", plural)
            for plural in ("resourceclaims", "resourceclaimtemplates", "resourceslices", "deviceclasses")
        ),
    }
)


def deletion_reply(resource_type: ResourceType, code: int, obj: dict[str, Any]) -> dict[str, Any]:
    """What a delete answers: the object while it waits (202) or where its kind returns it, otherwise a
    Success Status with its name, uid and resource."""
    if code != 200 or (resource_type.group, resource_type.plural) in _RETURN_DELETED_OBJECT:
        return obj
    metadata = obj.get("metadata") or {}
    details = {"name": metadata.get("name", ""), "group": resource_type.group, "kind": resource_type.plural}
    details = {k: v for k, v in details.items() if v}
    details["uid"] = metadata.get("uid", "")
    return status_body(0, details=details, success=True)


class Deletes:
    """delete and deletecollection, and what goes with an object removed."""

    def __init__(self, core: Core, reads: Reads) -> None:
        self.core = core
        self.reads = reads

    def delete(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        name: str,
        options: dict[str, Any],
        query: Query,
    ) -> tuple[int, dict[str, Any]]:
        """Deletes or starts deleting; returns (200 if gone now, 202 if waiting on finalizers, object)."""
        old = self.core.existing(resource_type, namespace, name)
        metadata = old["metadata"]
        preconditions = options.get("preconditions") or {}
        if preconditions.get("uid") not in (None, metadata.get("uid")):
            # The registry's own check (before storage's), which names the Kind.
            raise errors.conflict(
                resource_type.kind,
                resource_type.group,
                name,
                f"the UID in the precondition ({preconditions['uid']}) does not match the UID in record "
                f"({metadata.get('uid')}). The object might have been deleted and then recreated",
            )
        if preconditions.get("resourceVersion") not in (None, metadata.get("resourceVersion")):
            raise errors.conflict(
                resource_type.plural, resource_type.group, name,
                f"Precondition failed: ResourceVersion in precondition: {preconditions['resourceVersion']}, "
                f"ResourceVersion in object meta: {metadata.get('resourceVersion')}",
            )  # fmt: skip
        dry_run = is_dry_run(query) or "All" in (options.get("dryRun") or [])
        finalizers = list(metadata.get("finalizers") or [])
        policy = options.get("propagationPolicy") or query.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is True:
            policy = "Orphan"
        extra = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(policy or "")
        if extra and extra not in finalizers and not metadata.get("deletionTimestamp"):
            finalizers.append(extra)
        grace = builtin.graceful_deletion_seconds(resource_type.kind, old, options, query)
        held_by_content = False
        if is_namespace(resource_type) and not dry_run and not finalizers:
            self._empty_namespace(name)
            # Objects still held by their finalizers keep the namespace Terminating; it goes with the last.
            held_by_content = self._has_content(name)
        if finalizers or grace or held_by_content:
            if metadata.get("deletionTimestamp") and finalizers == list(metadata.get("finalizers") or []):
                return 202, self.core.output(resource_type, old)
            marked = clone(old)
            marked_metadata = marked["metadata"]
            marked_metadata["finalizers"] = finalizers
            if not finalizers:
                marked_metadata.pop("finalizers")
            if not marked_metadata.get("deletionTimestamp"):
                when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=grace)
                marked_metadata["deletionTimestamp"] = times.format_time(when)
                marked_metadata["deletionGracePeriodSeconds"] = grace
                # As the real registry does, so that controllers filtering on generation see the deletion.
                if "generation" in marked_metadata:
                    marked_metadata["generation"] += 1
            if is_namespace(resource_type):
                marked.setdefault("status", {})["phase"] = "Terminating"
                marked.setdefault("spec", {})["finalizers"] = ["kubernetes"]
            if dry_run:
                return 202, self.core.output(resource_type, marked)
            updated = self.core.store.update(
                resource_type.key(namespace, name), marked, int(metadata["resourceVersion"])
            )
            return 202, self.core.output(resource_type, updated)
        if dry_run:
            return 200, self.core.output(resource_type, old)
        return 200, self.core.output(
            resource_type, self.remove(resource_type, namespace, name, int(metadata["resourceVersion"]))
        )

    def remove(
        self, resource_type: ResourceType, namespace: str | None, name: str, revision: int
    ) -> dict[str, Any]:
        """Removes the object now, with what goes with it: a namespace's contents, a CRD's resources."""
        if is_namespace(resource_type):
            self._empty_namespace(name)
        try:
            removed = self.core.store.delete(resource_type.key(namespace, name), revision)
            if resource_type.kind == "Service" and not resource_type.group and self.core.service_allocations:
                self.core.service_allocations.release(removed)
        except Conflict:
            raise errors.conflict(
                resource_type.plural, resource_type.group, name, errors.STALE_OBJECT
            ) from None
        if namespace is not None:
            self.finish_terminating_namespace(namespace)
        if resource_type.kind == "CustomResourceDefinition" and resource_type.group == "apiextensions.k8s.io":
            spec = removed.get("spec", {})
            prefix = f"/registry/{spec.get('group')}/{spec.get('names', {}).get('plural')}/"
            for key in self.core.store.keys(prefix):
                self.core.store.delete(key)
            self.core.after_write(resource_type)
        return removed

    def _has_content(self, namespace: str) -> bool:
        return any(
            self.core.store.count(t.prefix(namespace))
            for t in self.core.registry
            if t.namespaced and not t.virtual
        )

    def finish_terminating_namespace(self, namespace: str) -> None:
        """Removes a Terminating namespace once its last object is gone (the namespace controller's job)."""
        key = self.core.core_type("namespaces").key(None, namespace)
        namespace_obj = self.core.store.get(key)
        if (
            namespace_obj is not None
            and namespace_obj["metadata"].get("deletionTimestamp")
            and not namespace_obj["metadata"].get("finalizers")
            and not self._has_content(namespace)
        ):
            self.core.store.delete(key)

    def _empty_namespace(self, namespace: str) -> None:
        for resource_type in list(self.core.registry):
            if not resource_type.namespaced or resource_type.virtual:
                continue
            for obj in self.core.store.list(resource_type.prefix(namespace))[0]:
                name = obj["metadata"]["name"]
                try:
                    self.delete(resource_type, namespace, name, {}, {})
                except ApiError:
                    continue

    def delete_collection(
        self, resource_type: ResourceType, namespace: str | None, options: dict[str, Any], query: Query
    ) -> list[dict[str, Any]]:
        objects, _ = self.reads.list_objects(
            resource_type, namespace, {k: v for k, v in query.items() if k != "limit"}
        )
        deleted = []
        for obj in objects:
            metadata = obj["metadata"]
            try:
                deleted.append(
                    self.delete(resource_type, metadata.get("namespace"), metadata["name"], options, query)[1]
                )
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return deleted
