"""The REST verbs over stored objects, with the API server's object semantics.

`Resources` turns get/list/create/update/patch/delete/deletecollection on a `ResourceType` into store
operations, applying what a real API server applies on the way:
- create: namespace must exist and not be terminating; `generateName`; uid, creationTimestamp,
  generation 1; status dropped where a status subresource owns it; kind defaults; admission (metadata
  rules, then a custom resource's schema: pruning, defaults, validation, CEL).
- update: optimistic concurrency on `metadata.resourceVersion` (409 Conflict); the main resource cannot
  change status and the status subresource can change only status; generation grows only when the
  spec (everything but metadata and status) changes; an update that changes nothing writes nothing.
- delete: preconditions; finalizers (and the propagation policy's `foregroundDeletion`/`orphan`) turn a
  delete into setting `deletionTimestamp`; the object goes once its last finalizer is removed. Pods bound
  to a node are deleted gracefully (the node agent finishes the deletion). Deleting a namespace deletes
  its contents at once; if finalizers hold some, the namespace stays Terminating and goes with the last.
- dryRun=All runs all of it and stores nothing; fieldValidation=Strict refuses unknown fields (400,
  `strict decoding error: unknown field "spec.x"`), which custom resources otherwise lose to pruning.

Every method is synchronous and runs to completion on the event loop without awaiting, so a read and the
write that depends on it cannot interleave with another request: patches need no retry loop.
"""

from __future__ import annotations

import base64
import datetime
import secrets
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from kubesemantics.selectors import SelectorError, field_matcher, label_matcher
from localkube.admission.errors import AdmissionError, FieldError, SchemaInvalid
from localkube.admission.schema import admit, prune
from localkube.server import builtin, crds, errors, events, patching
from localkube.server.errors import ApiError
from localkube.server.registry import Registry, ResourceType
from localkube.server.validation import unknown_builtin_fields, validate_metadata
from localkube.storage import AlreadyExists, Conflict, NotFound, Store

Query = dict[str, str]
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SYSTEM_NAMESPACES = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    for name in ("default", "kube-system", "kube-public", "kube-node-lease")
]


def clone(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON-shaped object (several times faster than copy.deepcopy)."""
    copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return copied


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = obj["metadata"] = {}
    return metadata


def _spec_part(obj: dict[str, Any], with_status: bool) -> dict[str, Any]:
    """What generation counts: everything but metadata (and status, when a subresource owns it)."""
    skipped = ("metadata", "status") if with_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skipped}


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = {
        k: v for k, v in obj.get("metadata", {}).items() if k not in ("resourceVersion", "managedFields")
    }
    return {**obj, "metadata": metadata}


def _dry_run(query: Query) -> bool:
    return query.get("dryRun") == "All"


def encode_continue(revision: int, key: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": revision, "start": key})).decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def parse_resource_version(text: str | None, field: str = "resourceVersion") -> int | None:
    if text in (None, ""):
        return None
    try:
        return int(str(text))
    except ValueError as exc:
        raise errors.bad_request(f'invalid {field}: "{text}" is not a valid resource version') from exc


class Resources:
    """The REST verbs. `on_crds_changed` runs after a CRD is written or removed (registry refresh)."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self._service_allocations: builtin.ServiceAllocations | None = None
        self.registry.sync_crds(self._crd_objects())

    # -- helpers ----------------------------------------------------------------------------------------

    def _crd_objects(self) -> list[dict[str, Any]]:
        crd_type = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crd_type is not None
        return self.store.list(crd_type.prefix(None))[0]

    def seed(self, objects: list[dict[str, Any]]) -> None:
        """Creates each object that does not exist yet (what a fresh cluster starts with)."""
        for obj in objects:
            group, _, version = obj["apiVersion"].rpartition("/")
            resource_type = self.registry.by_kind(group, version, obj["kind"])
            assert resource_type is not None, obj["kind"]
            namespace = obj["metadata"].get("namespace")
            if self.store.get(resource_type.key(namespace, obj["metadata"]["name"])) is None:
                self.create(resource_type, namespace, clone(obj), {})

    def _core(self, plural: str) -> ResourceType:
        resource_type = self.registry.get("", "v1", plural)
        assert resource_type is not None
        return resource_type

    def output(self, resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as this version serves it (several CRD versions share one stored object)."""
        if resource_type.stored_as is not None:
            return events.from_core(obj)
        obj["apiVersion"] = resource_type.api_version
        obj["kind"] = resource_type.kind
        return obj

    @staticmethod
    def _stored_form(resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return events.to_core(obj) if resource_type.stored_as is not None else obj

    @staticmethod
    def _served_form(resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """What a patch applies to: the stored object, or its view for a resource stored as another."""
        return events.from_core(obj) if resource_type.stored_as is not None else obj

    def _existing(self, resource_type: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.store.get(resource_type.key(namespace, name))
        if obj is None:
            raise errors.not_found(resource_type.plural, resource_type.group, name)
        return obj

    def _refuse(self, resource_type: ResourceType, name: str, causes: list[FieldError]) -> ApiError:
        return errors.from_status(
            AdmissionError(resource_type.kind, resource_type.group, name, causes).status
        )

    def _admit(
        self, resource_type: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, query: Query
    ) -> dict[str, Any]:
        name = _metadata(obj).get("name") or _metadata(obj).get("generateName") or ""
        causes = validate_metadata(resource_type.kind, obj["metadata"], creating=old is None)
        if query.get("fieldValidation") == "Strict":
            if resource_type.custom and resource_type.schema:
                unknown = prune(clone(obj), resource_type.schema, root=True)
            else:
                gvk = (resource_type.group, resource_type.version, resource_type.kind)
                unknown = unknown_builtin_fields(gvk, obj)
            if unknown:
                raise errors.bad_request(
                    "strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in unknown)
                )
        if resource_type.custom and resource_type.schema:
            try:
                obj = admit(resource_type.schema, obj, old)
            except SchemaInvalid as refused:
                causes += refused.errors
        elif resource_type.kind == "CustomResourceDefinition":
            causes += crds.validate(obj)
        if causes:
            raise self._refuse(resource_type, name, causes)
        return obj

    def _check_namespace(self, resource_type: ResourceType, namespace: str | None, name: str) -> None:
        if not resource_type.namespaced:
            return
        namespace_obj = self.store.get(self._core("namespaces").key(None, namespace or ""))
        if namespace_obj is None:
            raise errors.not_found("namespaces", "", namespace or "")
        if namespace_obj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f'{errors.qualified(resource_type.plural, resource_type.group)} "{name}" is forbidden: unable to create new '
                f"content in namespace {namespace} because it is being terminated"
            )

    def _after_write(self, resource_type: ResourceType) -> None:
        if resource_type.kind == "CustomResourceDefinition" and resource_type.group == "apiextensions.k8s.io":
            self.registry.sync_crds(self._crd_objects())

    # -- reads ------------------------------------------------------------------------------------------

    def get(self, resource_type: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        return self.output(resource_type, self._existing(resource_type, namespace, name))

    def list_objects(
        self, resource_type: ResourceType, namespace: str | None, query: Query
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The selected objects and the list metadata (resourceVersion, continue, remainingItemCount)."""
        try:
            label_match = label_matcher(query.get("labelSelector"))
            field_match = field_matcher(query.get("fieldSelector"))
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc
        limit = int(query.get("limit") or 0)
        token = query.get("continue")
        revision, start_after = decode_continue(token) if token else (self.store.revision, None)
        prefix = resource_type.prefix(namespace)
        exact_name = _exact_name(query.get("fieldSelector"))
        if exact_name is not None and start_after is None and (namespace or not resource_type.namespaced):
            # kubectl's delete and wait list by name: one lookup instead of a scan.
            found = self.store.get(resource_type.key(namespace, exact_name))
            objects = [found] if found is not None and (label_match is None or label_match(found)) else []
            more = False
        elif label_match is None and field_match is None:
            objects, _ = self.store.list(prefix, start_after=start_after, limit=limit + 1 if limit else None)
            more = bool(limit) and len(objects) > limit
            objects = objects[:limit] if more else objects
        else:
            objects, more = self._filtered(prefix, start_after, limit, label_match, field_match)
        metadata: dict[str, Any] = {"resourceVersion": str(revision)}
        if more and objects:
            last = objects[-1]["metadata"]
            metadata["continue"] = encode_continue(
                revision, resource_type.key(last.get("namespace"), last["name"])
            )
        return [self.output(resource_type, obj) for obj in objects], metadata

    def _filtered(
        self,
        prefix: str,
        start_after: str | None,
        limit: int,
        label_match: Callable[[dict[str, Any]], bool] | None,
        field_match: Callable[[dict[str, Any]], bool] | None,
    ) -> tuple[list[dict[str, Any]], bool]:
        selected: list[dict[str, Any]] = []
        for obj in self.store.list(prefix, start_after=start_after)[0]:
            if (label_match is None or label_match(obj)) and (field_match is None or field_match(obj)):
                if limit and len(selected) == limit:
                    return selected, True
                selected.append(obj)
        return selected, False

    # -- create -----------------------------------------------------------------------------------------

    def create(
        self, resource_type: ResourceType, namespace: str | None, obj: dict[str, Any], query: Query
    ) -> dict[str, Any]:
        obj = self._prepare_create(resource_type, namespace, obj)
        obj = self._admit(resource_type, obj, None, query)
        if query.get("fieldManager") and "managedFields" not in obj["metadata"]:
            obj = patching.record(resource_type, None, obj, query["fieldManager"], None)
        name = obj["metadata"]["name"]
        if _dry_run(query):
            if self.store.get(resource_type.key(namespace, name)) is not None:
                raise errors.already_exists(resource_type.plural, resource_type.group, name)
            return self.output(resource_type, obj)
        try:
            created = self.store.create(resource_type.key(namespace, name), obj)
        except AlreadyExists:
            raise errors.already_exists(resource_type.plural, resource_type.group, name) from None
        self._after_write(resource_type)
        return self.output(resource_type, created)

    def _prepare_create(
        self, resource_type: ResourceType, namespace: str | None, obj: dict[str, Any]
    ) -> dict[str, Any]:
        _check_identity(resource_type, obj)
        obj = self._stored_form(resource_type, obj)
        metadata = _metadata(obj)
        if resource_type.namespaced:
            if metadata.get("namespace") not in (None, "", namespace):
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        if metadata.get("resourceVersion"):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        self._check_namespace(
            resource_type, namespace, str(metadata.get("name") or metadata.get("generateName") or "")
        )
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = str(metadata["generateName"]) + "".join(
                secrets.choice(_GENERATE_ALPHABET) for _ in range(5)
            )
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = now()
        for server_owned in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            metadata.pop(server_owned, None)
        if resource_type.custom or "spec" in obj:
            metadata["generation"] = 1
        else:
            metadata.pop("generation", None)
        if resource_type.has_status():
            obj.pop("status", None)
        builtin.default_on_create(resource_type.kind, obj, self._services)
        builtin.normalize_on_write(resource_type.kind, obj)
        if resource_type.kind == "CustomResourceDefinition":
            crds.set_status(obj)
        return obj

    def _services(self) -> builtin.ServiceAllocations:
        if self._service_allocations is None:
            services = self.store.list(self._core("services").prefix(None))[0]
            self._service_allocations = builtin.ServiceAllocations.of(services)
        return self._service_allocations

    # -- update -----------------------------------------------------------------------------------------

    def update(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        name: str,
        obj: dict[str, Any],
        subresource: str | None,
        query: Query,
    ) -> dict[str, Any]:
        _check_identity(resource_type, obj)
        obj = self._stored_form(resource_type, obj)
        old = self._existing(resource_type, namespace, name)
        metadata = _metadata(obj)
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
            raise self._refuse(
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
        new = self._admit(resource_type, new, old, query)
        if _comparable(new) == _comparable(old):
            return self.output(resource_type, old)
        if query.get("fieldManager") and not applying:
            new = patching.record(resource_type, old, new, query["fieldManager"], subresource)
        # An object that waited only on finalizers goes when the last one is removed; one in a graceful
        # deletion (a pod on a node) waits for its grace period to be ended by a second delete.
        waiting_on_finalizers = old["metadata"].get("deletionTimestamp") and not old["metadata"].get(
            "deletionGracePeriodSeconds"
        )
        if waiting_on_finalizers and not new["metadata"].get("finalizers"):
            if _dry_run(query):
                return self.output(resource_type, new)
            return self.output(resource_type, self._remove(resource_type, namespace, name, old_rv))
        if _dry_run(query):
            return self.output(resource_type, new)
        try:
            updated = self.store.update(resource_type.key(namespace, name), new, old_rv)
        except Conflict:
            raise errors.conflict(
                resource_type.plural, resource_type.group, name, errors.STALE_OBJECT
            ) from None
        except NotFound:
            raise errors.not_found(resource_type.plural, resource_type.group, name) from None
        self._after_write(resource_type)
        return self.output(resource_type, updated)

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
        metadata = _metadata(new)
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
                raise self._refuse(
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
            changed = _spec_part(new, with_status) != _spec_part(old, with_status)
            metadata["generation"] = generation + 1 if changed else generation
        else:
            metadata.pop("generation", None)
        if resource_type.kind == "CustomResourceDefinition":
            new["status"] = old.get("status", {})
            crds.set_status(new)
        return new

    # -- patch ------------------------------------------------------------------------------------------

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
        old = self.store.get(resource_type.key(namespace, name))
        if content_type == patching.APPLY:
            applied = patching.parse_apply(patch_body)
            _check_identity(resource_type, applied)
            manager = query.get("fieldManager", "")
            if not manager:
                raise errors.bad_request("PATCH with apply-patch requires a fieldManager")
            if old is None:
                if subresource:
                    raise errors.not_found(resource_type.plural, resource_type.group, name)
                _metadata(applied).setdefault("name", name)
                if applied["metadata"]["name"] != name:
                    raise errors.bad_request(
                        f"the name of the object ({applied['metadata']['name']}) does not match the name on the URL ({name})"
                    )
                created = patching.apply(
                    resource_type, None, applied, manager, query.get("force") == "true", None
                )
                return 201, self.create(resource_type, namespace, created, query)
            result = patching.apply(
                resource_type,
                self._served_form(resource_type, old),
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
            result = patching.patch(self._served_form(resource_type, old), patch_body, content_type, gvk)
        result = self._stored_form(resource_type, result)
        old_rv = old["metadata"]["resourceVersion"]
        requested = result.get("metadata", {}).get("resourceVersion")
        expected = parse_resource_version(requested) if requested and requested != old_rv else int(old_rv)
        applying = content_type == patching.APPLY
        return 200, self._write_update(
            resource_type, namespace, old, result, subresource, expected, query, applying
        )

    # -- delete -----------------------------------------------------------------------------------------

    def delete(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        name: str,
        options: dict[str, Any],
        query: Query,
    ) -> tuple[int, dict[str, Any]]:
        """Deletes or starts deleting; returns (200 if gone now, 202 if waiting on finalizers, object)."""
        old = self._existing(resource_type, namespace, name)
        metadata = old["metadata"]
        preconditions = options.get("preconditions") or {}
        if preconditions.get("uid") not in (None, metadata.get("uid")):
            raise errors.conflict(
                resource_type.plural, resource_type.group, name,
                f"Precondition failed: UID in precondition: {preconditions['uid']}, UID in object meta: {metadata.get('uid')}",
            )  # fmt: skip
        if preconditions.get("resourceVersion") not in (None, metadata.get("resourceVersion")):
            raise errors.conflict(
                resource_type.plural, resource_type.group, name,
                f"Precondition failed: ResourceVersion in precondition: {preconditions['resourceVersion']}, "
                f"ResourceVersion in object meta: {metadata.get('resourceVersion')}",
            )  # fmt: skip
        dry_run = _dry_run(query) or "All" in (options.get("dryRun") or [])
        finalizers = list(metadata.get("finalizers") or [])
        policy = options.get("propagationPolicy") or query.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is True:
            policy = "Orphan"
        extra = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(policy or "")
        if extra and extra not in finalizers and not metadata.get("deletionTimestamp"):
            finalizers.append(extra)
        grace = builtin.graceful_deletion_seconds(resource_type.kind, old, options, query)
        held_by_content = False
        if _is_namespace(resource_type) and not dry_run and not finalizers:
            self._empty_namespace(name)
            # Objects still held by their finalizers keep the namespace Terminating; it goes with the last.
            held_by_content = self._has_content(name)
        if finalizers or grace or held_by_content:
            if metadata.get("deletionTimestamp") and finalizers == list(metadata.get("finalizers") or []):
                return 202, self.output(resource_type, old)
            marked = clone(old)
            marked_metadata = marked["metadata"]
            marked_metadata["finalizers"] = finalizers
            if not finalizers:
                marked_metadata.pop("finalizers")
            if not marked_metadata.get("deletionTimestamp"):
                when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=grace)
                marked_metadata["deletionTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
                marked_metadata["deletionGracePeriodSeconds"] = grace
                # As the real registry does, so that controllers filtering on generation see the deletion.
                if "generation" in marked_metadata:
                    marked_metadata["generation"] += 1
            if _is_namespace(resource_type):
                marked.setdefault("status", {})["phase"] = "Terminating"
                marked.setdefault("spec", {})["finalizers"] = ["kubernetes"]
            if dry_run:
                return 202, self.output(resource_type, marked)
            updated = self.store.update(
                resource_type.key(namespace, name), marked, int(metadata["resourceVersion"])
            )
            return 202, self.output(resource_type, updated)
        if dry_run:
            return 200, self.output(resource_type, old)
        return 200, self.output(
            resource_type, self._remove(resource_type, namespace, name, int(metadata["resourceVersion"]))
        )

    def _remove(
        self, resource_type: ResourceType, namespace: str | None, name: str, revision: int
    ) -> dict[str, Any]:
        """Removes the object now, with what goes with it: a namespace's contents, a CRD's resources."""
        if _is_namespace(resource_type):
            self._empty_namespace(name)
        try:
            removed = self.store.delete(resource_type.key(namespace, name), revision)
            if resource_type.kind == "Service" and not resource_type.group and self._service_allocations:
                self._service_allocations.release(removed)
        except Conflict:
            raise errors.conflict(
                resource_type.plural, resource_type.group, name, errors.STALE_OBJECT
            ) from None
        if namespace is not None:
            self._finish_terminating_namespace(namespace)
        if resource_type.kind == "CustomResourceDefinition" and resource_type.group == "apiextensions.k8s.io":
            spec = removed.get("spec", {})
            prefix = f"/registry/{spec.get('group')}/{spec.get('names', {}).get('plural')}/"
            for key in self.store.keys(prefix):
                self.store.delete(key)
            self._after_write(resource_type)
        return removed

    def _has_content(self, namespace: str) -> bool:
        return any(
            self.store.count(t.prefix(namespace)) for t in self.registry if t.namespaced and not t.virtual
        )

    def _finish_terminating_namespace(self, namespace: str) -> None:
        """Removes a Terminating namespace once its last object is gone (the namespace controller's job)."""
        key = self._core("namespaces").key(None, namespace)
        namespace_obj = self.store.get(key)
        if (
            namespace_obj is not None
            and namespace_obj["metadata"].get("deletionTimestamp")
            and not namespace_obj["metadata"].get("finalizers")
            and not self._has_content(namespace)
        ):
            self.store.delete(key)

    def _empty_namespace(self, namespace: str) -> None:
        for resource_type in list(self.registry):
            if not resource_type.namespaced or resource_type.virtual:
                continue
            for obj in self.store.list(resource_type.prefix(namespace))[0]:
                name = obj["metadata"]["name"]
                try:
                    self.delete(resource_type, namespace, name, {}, {})
                except ApiError:
                    continue

    def delete_collection(
        self, resource_type: ResourceType, namespace: str | None, options: dict[str, Any], query: Query
    ) -> list[dict[str, Any]]:
        objects, _ = self.list_objects(
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


def _is_namespace(resource_type: ResourceType) -> bool:
    return resource_type.kind == "Namespace" and not resource_type.group


def _check_identity(resource_type: ResourceType, obj: dict[str, Any]) -> None:
    """The body's apiVersion and kind, when given, must be the endpoint's."""
    if not isinstance(obj, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    api_version = obj.setdefault("apiVersion", resource_type.api_version)
    kind = obj.setdefault("kind", resource_type.kind)
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    if group != resource_type.group or kind != resource_type.kind:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version ({resource_type.api_version})"
            if group != resource_type.group
            else f"the kind in the data ({kind}) does not match the expected kind ({resource_type.kind})"
        )


def _exact_name(field_selector: str | None) -> str | None:
    """The name of `metadata.name=x` when it is the whole field selector (kubectl's delete and wait)."""
    if not field_selector or "," in field_selector:
        return None
    for operator in ("==", "="):
        path, found, value = field_selector.partition(operator)
        if found and path.strip() == "metadata.name" and "!" not in path:
            return value.strip()
    return None
