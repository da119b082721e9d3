"""The update and patch verbs: optimistic concurrency on `metadata.resourceVersion` (409 Conflict); the main
resource cannot change status and the status subresource can change only status; generation grows only
when the spec (everything but metadata and status) changes; an update that changes nothing writes nothing;
removing the last finalizer of an object being deleted removes it. Patches are JSON, merge, strategic
merge or server-side apply (which creates the object when it is missing: 201)."""

from __future__ import annotations

from typing import Any

import orjson

from localkube.admission.errors import FieldError
from localkube.server import builtin, crds, errors, patching
from localkube.server.registry import ResourceType
from localkube.server.rest.common import (
    Core,
    Query,
    check_identity,
    clone,
    comparable,
    is_dry_run,
    metadata_of,
    parse_resource_version,
    spec_part,
)
from localkube.server.rest.create import Creates
from localkube.server.rest.delete import Deletes
from localkube.storage import Conflict, NotFound


class Updates:
    """update and patch (server-side apply may create; removing the last finalizer may delete)."""

    def __init__(self, core: Core, creates: Creates, deletes: Deletes) -> None:
        self.core = core
        self.creates = creates
        self.deletes = deletes

    def update(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        name: str,
        obj: dict[str, Any],
        subresource: str | None,
        query: Query,
    ) -> dict[str, Any]:
        check_identity(resource_type, obj)
        obj = self.core.stored_form(resource_type, obj)
        old = self.core.existing(resource_type, namespace, name)
        metadata = metadata_of(obj)
        if metadata.get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({metadata.get('name', '')}) does not match the name on the URL ({name})"
            )
        if resource_type.namespaced and metadata.get("namespace") not in (None, "", namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        expected = parse_resource_version(metadata.get("resourceVersion"), "metadata.resourceVersion")
        if expected is None and resource_type.custom:
            raise self.core.refuse(
                resource_type,
                name,
                [
                    FieldError(
                        "metadata.resourceVersion", "Invalid value", 0, "must be specified for an update"
                    )
                ],
            )
        return self._write_update(resource_type, namespace, old, obj, subresource, expected, query)

    def _write_update(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        old: dict[str, Any],
        obj: dict[str, Any],
        subresource: str | None,
        expected: int | None,
        query: Query,
        applying: bool = False,
    ) -> dict[str, Any]:
        name = old["metadata"]["name"]
        old_rv = int(old["metadata"]["resourceVersion"])
        if expected is not None and expected != old_rv:
            raise errors.conflict(resource_type.plural, resource_type.group, name, errors.STALE_OBJECT)
        new = self._merge_update(resource_type, old, obj, subresource)
        new = self.core.admit(resource_type, new, old, query)
        if comparable(new) == comparable(old):
            return self.core.output(resource_type, old)
        if query.get("fieldManager") and not applying:
            new = patching.record(resource_type, old, new, query["fieldManager"], subresource)
        # An object that waited only on finalizers goes when the last one is removed; one in a graceful
        # deletion (a pod on a node) waits for its grace period to be ended by a second delete.
        waiting_on_finalizers = old["metadata"].get("deletionTimestamp") and not old["metadata"].get(
            "deletionGracePeriodSeconds"
        )
        if waiting_on_finalizers and not new["metadata"].get("finalizers"):
            if is_dry_run(query):
                return self.core.output(resource_type, new)
            return self.core.output(
                resource_type, self.deletes.remove(resource_type, namespace, name, old_rv)
            )
        if is_dry_run(query):
            return self.core.output(resource_type, new)
        try:
            updated = self.core.store.update(resource_type.key(namespace, name), new, old_rv)
        except Conflict:
            raise errors.conflict(
                resource_type.plural, resource_type.group, name, errors.STALE_OBJECT
            ) from None
        except NotFound:
            raise errors.not_found(resource_type.plural, resource_type.group, name) from None
        self.core.after_write(resource_type)
        return self.core.output(resource_type, updated)

    def _merge_update(
        self, resource_type: ResourceType, old: dict[str, Any], obj: dict[str, Any], subresource: str | None
    ) -> dict[str, Any]:
        """The object to store: the request's changes limited to what this endpoint may change."""
        old_metadata = old["metadata"]
        if subresource == "status":
            new = clone(old)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            return new
        new = obj
        if not resource_type.custom:
            builtin.normalize_on_write(resource_type.kind, new)
        metadata = metadata_of(new)
        for kept in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
        ):
            if kept in old_metadata:
                metadata[kept] = old_metadata[kept]
            else:
                metadata.pop(kept, None)
        if "managedFields" not in metadata and "managedFields" in old_metadata:
            metadata["managedFields"] = old_metadata["managedFields"]
        if old_metadata.get("deletionTimestamp"):
            added = set(metadata.get("finalizers") or []) - set(old_metadata.get("finalizers") or [])
            if added:
                raise self.core.refuse(
                    resource_type,
                    old_metadata["name"],
                    [
                        FieldError(
                            "metadata.finalizers",
                            "Forbidden",
                            detail="no new finalizers can be added if the object is being deleted, found new finalizers "
                            + orjson.dumps(sorted(added)).decode(),
                        )
                    ],
                )
        if resource_type.has_status():
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        with_status = resource_type.has_status()
        generation = old_metadata.get("generation")
        if generation is not None:
            changed = spec_part(new, with_status) != spec_part(old, with_status)
            metadata["generation"] = generation + 1 if changed else generation
        else:
            metadata.pop("generation", None)
        if resource_type.kind == "CustomResourceDefinition":
            new["status"] = old.get("status", {})
            crds.set_status(new)
        return new

    def patch(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        name: str,
        patch_body: bytes,
        content_type: str,
        subresource: str | None,
        query: Query,
    ) -> tuple[int, dict[str, Any]]:
        """Applies a patch; returns (HTTP code, object): 201 when server-side apply created it."""
        old = self.core.store.get(resource_type.key(namespace, name))
        if content_type == patching.APPLY:
            applied = patching.parse_apply(patch_body)
            check_identity(resource_type, applied)
            manager = query.get("fieldManager", "")
            if not manager:
                raise errors.invalid_option(
                    "PatchOptions",
                    "fieldManager",
                    "FieldValueRequired",
                    "Required value: is required for apply patch",
                )
            if query.get("fieldValidation") == "Strict":
                _refuse_untyped(resource_type, applied, self.core.unknown_fields(resource_type, applied))
            if old is None:
                if subresource:
                    raise errors.not_found(resource_type.plural, resource_type.group, name)
                metadata_of(applied).setdefault("name", name)
                if applied["metadata"]["name"] != name:
                    raise errors.bad_request(
                        f"the name of the object ({applied['metadata']['name']}) does not match the name on the URL ({name})"
                    )
                created = patching.apply(
                    resource_type, None, applied, manager, query.get("force") == "true", None
                )
                return 201, self.creates.create(resource_type, namespace, created, query)
            result = patching.apply(
                resource_type,
                self.core.served_form(resource_type, old),
                applied,
                manager,
                query.get("force") == "true",
                subresource,
            )
        else:
            if old is None:
                raise errors.not_found(resource_type.plural, resource_type.group, name)
            gvk = (
                None
                if resource_type.custom
                else (resource_type.group, resource_type.version, resource_type.kind)
            )
            result = patching.patch(self.core.served_form(resource_type, old), patch_body, content_type, gvk)
        result = self.core.stored_form(resource_type, result)
        old_rv = old["metadata"]["resourceVersion"]
        requested = result.get("metadata", {}).get("resourceVersion")
        expected = parse_resource_version(requested) if requested and requested != old_rv else int(old_rv)
        applying = content_type == patching.APPLY
        return 200, self._write_update(
            resource_type, namespace, old, result, subresource, expected, query, applying
        )


def _refuse_untyped(resource_type: ResourceType, applied: dict[str, Any], unknown: list[str]) -> None:
    """An apply configuration with fields its kind does not declare cannot be typed: the API server's field
    manager fails (500, in structured-merge-diff's words) under Strict field validation."""
    if not unknown:
        return
    metadata = applied.get("metadata") or {}
    problems = [f".{path}: field not declared in schema" for path in unknown]
    detail = problems[0] if len(problems) == 1 else "errors:\n  " + "\n  ".join(problems)
    raise errors.ApiError(
        500,
        "",
        f"failed to create typed patch object ({metadata.get('namespace', '')}/{metadata.get('name', '')}; "
        f"{resource_type.group}/{resource_type.version}, Kind={resource_type.kind}): {detail}",
    )
