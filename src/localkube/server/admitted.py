"""Writes as the REST verbs run them, and the admission retry loop around those that webhooks see.

A write that admission webhooks see is first run as a dry run to get the object it would store; mutating
webhooks may change it (then it is written as a create or an update of their result), validating webhooks
may refuse it; it is then written for real, provided nothing changed the stored object while the webhooks
were called — otherwise all of it is done again, as kube-apiserver retries its guaranteed update.
"""

from __future__ import annotations

from typing import Any

from localkube.server import bodies, errors, patching, webhooks
from localkube.server import warnings as recorded_warnings
from localkube.server.errors import ApiError
from localkube.server.negotiation import decode
from localkube.server.patching import PATCH_TYPES
from localkube.server.rest import Resources
from localkube.server.rest.common import Query, clone, is_dry_run, strict_decoding_error
from localkube.server.routing import JSON, Request, Target

# Rounds of admission for one write when the object changes while webhooks are called.
_ADMISSION_ATTEMPTS = 5


class Writes:
    """The write verbs of resource requests over `resources`, admitted by `webhooks` where they apply."""

    def __init__(self, resources: Resources, hooks: webhooks.Webhooks) -> None:
        self.resources = resources
        self.webhooks = hooks

    def run(self, request: Request, target: Target, verb: str, query: Query) -> tuple[int, dict[str, Any]]:
        """Runs one write verb without webhooks: (HTTP code, the object written)."""
        resources, resource_type, namespace = self.resources, target.resource_type, target.namespace
        name, sub = target.name or "", target.subresource
        if verb == "create":
            return 201, resources.create(resource_type, namespace, self._body(request, target), query)
        if verb == "update":
            return 200, resources.update(
                resource_type, namespace, name, self._body(request, target), sub, query
            )
        if verb == "patch":
            content_type = request.headers.get("content-type", "").split(";")[0].strip()
            if content_type not in PATCH_TYPES:
                raise patching.unknown_patch_type(resource_type)
            return resources.patch(resource_type, namespace, name, request.body, content_type, sub, query)
        options = decode(request) if request.body else {}
        return resources.delete(resource_type, namespace, name, options, query)

    @staticmethod
    def _body(request: Request, target: Target) -> dict[str, Any]:
        """The object a create or an update sends; a key it repeats is refused under Strict field validation
        and warned of under Warn (the default), as the API server's strict decoder does."""
        content_type = request.headers.get("content-type", JSON)
        validation = request.query.get("fieldValidation") or "Warn"
        decoded = decode(request)
        repeated = (
            bodies.duplicate_fields(request.body, content_type, decoded) if validation != "Ignore" else []
        )
        if repeated and validation == "Strict":
            raise strict_decoding_error(target.resource_type, [f'duplicate field "{p}"' for p in repeated])
        for path in repeated:
            recorded_warnings.add(f'duplicate field "{path}"')
        return decoded

    def _write_object(
        self, target: Target, creating: bool, obj: dict[str, Any], query: Query
    ) -> dict[str, Any]:
        """Creates or replaces with an object admission produced (a copy of it: the verbs change theirs)."""
        if creating:
            return self.resources.create(target.resource_type, target.namespace, clone(obj), query)
        name = obj["metadata"]["name"]
        return self.resources.update(
            target.resource_type, target.namespace, name, clone(obj), target.subresource, query
        )

    async def admitted(
        self, request: Request, target: Target, verb: str, warnings: list[str]
    ) -> tuple[int, dict[str, Any]]:
        """One write through admission webhooks (see the module's docstring); their warnings are left in
        `warnings`."""
        resources, resource_type, namespace = self.resources, target.resource_type, target.namespace
        name, sub = target.name or "", target.subresource
        query = request.query
        dry_run = is_dry_run(query)
        assert request.user is not None
        for _ in range(_ADMISSION_ATTEMPTS):
            old = resources.store.get(resource_type.key(namespace, name)) if name else None
            if verb == "delete":
                if old is None:
                    raise errors.not_found(resource_type.plural, resource_type.group, name)
                attributes = webhooks.Attributes(
                    "DELETE", resource_type, sub or "", namespace, name, None, resources.output(resource_type, clone(old)),
                    request.user, dry_run, decode(request) if request.body else {},
                )  # fmt: skip
                await self.webhooks.validate(attributes)
                if resources.store.get(resource_type.key(namespace, name)) == old:
                    warnings[:] = attributes.warnings
                    return self.run(request, target, verb, query)
                continue
            code, candidate = self.run(request, target, verb, {**query, "dryRun": "All"})
            attributes = webhooks.Attributes(
                "CREATE" if old is None else "UPDATE", resource_type, sub or "", namespace,
                candidate["metadata"]["name"], clone(candidate),
                None if old is None else resources.output(resource_type, clone(old)), request.user, dry_run,
            )  # fmt: skip
            mutated = await self.webhooks.mutate(attributes) or candidate
            final: dict[str, Any] | None = None
            if mutated != candidate:
                # What a mutating webhook changed is admitted again (schema, defaults, metadata rules)
                # and written as a create or a replace of exactly what was admitted.
                final = mutated
                if old is not None:
                    final["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
                candidate = self._write_object(target, old is None, final, {**query, "dryRun": "All"})
            attributes.obj = clone(candidate)
            await self.webhooks.validate(attributes)
            warnings[:] = attributes.warnings
            if dry_run:
                return code, candidate
            if resources.store.get(resource_type.key(namespace, name)) != old:
                continue
            if final is None:
                return self.run(request, target, verb, query)
            return code, self._write_object(target, old is None, final, query)
        raise errors.conflict(
            resource_type.plural,
            resource_type.group,
            name,
            "the object kept changing while admission webhooks were called",
        )

    async def admitted_delete_collection(self, request: Request, target: Target) -> list[dict[str, Any]]:
        """deletecollection as kube-apiserver runs it: a delete of each selected object, each admitted (a
        refusal stops the collection there, with what was deleted before it gone)."""
        query = {k: v for k, v in request.query.items() if k != "limit"}
        objects, _ = self.resources.list_objects(target.resource_type, target.namespace, query)
        deleted = []
        for obj in objects:
            metadata = obj["metadata"]
            item = Target(target.resource_type, metadata.get("namespace"), metadata["name"], None)
            try:
                deleted.append((await self.admitted(request, item, "delete", []))[1])
            except ApiError as error:
                if error.code != 404:
                    raise
        return deleted
