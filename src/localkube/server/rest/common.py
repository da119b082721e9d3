"""What every REST verb shares: the `ResourcesBase` that holds the store and registry, serves an object in
its endpoint's form, admits objects (metadata rules, then a custom resource's schema: pruning, defaults,
validation, CEL) and checks namespaces; and the small helpers of the verbs (continue tokens, resource
versions, identity checks, timestamps, copies).

Every verb is synchronous and runs to completion on the event loop without awaiting, so a read and the
write that depends on it cannot interleave with another request: patches need no retry loop (the test
`tests/unit/localkube/test_store_transactions.py` holds the REST modules to that).
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable
from typing import Any

import orjson

from kubesemantics import times
from localkube.admission import quota, schema
from localkube.admission.errors import AdmissionError, FieldError, SchemaInvalid
from localkube.server import autoscaling, builtin, crds, errors, events
from localkube.server import warnings as recorded_warnings
from localkube.server.errors import ApiError
from localkube.server.plugins import AdmissionPlugins
from localkube.server.podvalidation import validate_pod
from localkube.server.registry import Registry, ResourceType
from localkube.server.validation import unknown_builtin_fields, validate_metadata
from localkube.server.webhookvalidation import validate_webhook_configuration
from localkube.server.workloadvalidation import validate_workload
from localkube.storage import Store

Query = dict[str, str]
SYSTEM_NAMESPACES = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    for name in ("default", "kube-system", "kube-public", "kube-node-lease")
]


Conversion = Callable[[dict[str, Any]], dict[str, Any]]
# The resources served as views of another resource's stored objects: (to the stored form, from it).
_VIEWS: dict[tuple[str, str, str], tuple[Conversion, Conversion]] = {
    ("events.k8s.io", "v1", "Event"): (events.to_core, events.from_core),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"): (autoscaling.from_v1, autoscaling.to_v1),
}


def _view(resource_type: ResourceType) -> tuple[Conversion, Conversion]:
    return _VIEWS[(resource_type.group, resource_type.version, resource_type.kind)]


def clone(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON-shaped object (several times faster than copy.deepcopy)."""
    copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return copied


def now() -> str:
    return times.format_time(datetime.datetime.now(datetime.UTC))


def metadata_of(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = obj["metadata"] = {}
    return metadata


def spec_part(obj: dict[str, Any], with_status: bool) -> dict[str, Any]:
    """What generation counts: everything but metadata (and status, when a subresource owns it)."""
    skipped = ("metadata", "status") if with_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skipped}


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = {
        k: v for k, v in obj.get("metadata", {}).items() if k not in ("resourceVersion", "managedFields")
    }
    return {**obj, "metadata": metadata}


def is_dry_run(query: Query) -> bool:
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


def is_namespace(resource_type: ResourceType) -> bool:
    return resource_type.kind == "Namespace" and not resource_type.group


def check_identity(resource_type: ResourceType, obj: dict[str, Any]) -> None:
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


def strict_decoding_error(resource_type: ResourceType, problems: list[str]) -> ApiError:
    """fieldValidation=Strict's refusal of unknown or duplicate fields, in the decoder's words."""
    kind, version = resource_type.kind, resource_type.version
    return errors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: '
        + ", ".join(problems)
    )


class Core:
    """The store and registry the verbs work on, and what they share: serving forms, admission, namespaces."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self.service_allocations: builtin.ServiceAllocations | None = None
        self.plugins = AdmissionPlugins(store, registry)
        self.registry.sync_crds(self.crd_objects())

    # -- helpers ----------------------------------------------------------------------------------------

    def crd_objects(self) -> list[dict[str, Any]]:
        crd_type = self.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crd_type is not None
        return self.store.list(crd_type.prefix(None))[0]

    def core_type(self, plural: str) -> ResourceType:
        resource_type = self.registry.get("", "v1", plural)
        assert resource_type is not None
        return resource_type

    def output(self, resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as this version serves it (several CRD versions share one stored object)."""
        if resource_type.stored_as is not None:
            return _view(resource_type)[1](obj)
        obj["apiVersion"] = resource_type.api_version
        obj["kind"] = resource_type.kind
        return obj

    @staticmethod
    def stored_form(resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return _view(resource_type)[0](obj) if resource_type.stored_as is not None else obj

    @staticmethod
    def served_form(resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """What a patch applies to: the stored object, or its view for a resource stored as another."""
        return _view(resource_type)[1](obj) if resource_type.stored_as is not None else obj

    def existing(self, resource_type: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.store.get(resource_type.key(namespace, name))
        if obj is None:
            raise errors.not_found(resource_type.plural, resource_type.group, name)
        return obj

    def refuse(self, resource_type: ResourceType, name: str, causes: list[FieldError]) -> ApiError:
        return errors.from_status(
            AdmissionError(resource_type.kind, resource_type.group, name, causes).status
        )

    def admit(
        self, resource_type: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, query: Query
    ) -> dict[str, Any]:
        name = metadata_of(obj).get("name") or metadata_of(obj).get("generateName") or ""
        causes = validate_metadata(resource_type.kind, obj["metadata"], creating=old is None)
        validation = query.get("fieldValidation") or "Warn"  # the default since Kubernetes 1.23
        if validation == "Strict":
            unknown = self.unknown_fields(resource_type, obj)
            if unknown:
                raise strict_decoding_error(resource_type, [f'unknown field "{path}"' for path in unknown])
        dropped: list[str] = []
        if resource_type.custom and resource_type.schema:
            try:
                obj = schema.admit(resource_type.schema, obj, old, dropped)
            except SchemaInvalid as refused:
                causes += refused.errors
        elif not resource_type.custom:
            # Typed decoding: unknown fields are lost, and the empty maps and lists Go leaves out.
            dropped = unknown_builtin_fields(self._stored_gvk(resource_type), obj, drop=True)
        if validation == "Warn":
            for path in dropped:
                recorded_warnings.add(f'unknown field "{path}"')
        if resource_type.kind == "CustomResourceDefinition" and not resource_type.custom:
            causes += crds.validate(obj)
        elif not (resource_type.custom and resource_type.schema):
            causes += validate_workload(resource_type.kind, obj, old)
            if resource_type.kind == "Pod" and not resource_type.group and old is None:
                causes += validate_pod(obj)
            causes += validate_webhook_configuration(resource_type.kind, obj)
            if resource_type.kind == "HorizontalPodAutoscaler" and resource_type.group == "autoscaling":
                causes += autoscaling.validate(obj)
            if resource_type.kind == "ResourceQuota" and not resource_type.group:
                causes += quota.validate(obj)
        if causes:
            raise self.refuse(resource_type, name, causes)
        self.plugins.validate_write(resource_type, obj, creating=old is None)
        return obj

    def unknown_fields(self, resource_type: ResourceType, obj: dict[str, Any]) -> list[str]:
        """The paths of the fields of `obj` its kind's schema does not declare."""
        if resource_type.custom and resource_type.schema:
            return schema.prune(clone(obj), resource_type.schema, root=True)
        return unknown_builtin_fields(self._stored_gvk(resource_type), obj)

    def _stored_gvk(self, resource_type: ResourceType) -> tuple[str, str, str]:
        """The kind an object is admitted as: its stored kind (an events.k8s.io Event is a core one, an
        autoscaling/v1 HorizontalPodAutoscaler a v2 one)."""
        stored = resource_type
        if resource_type.stored_as is not None:
            found = self.registry.get(*resource_type.stored_as)
            assert found is not None
            stored = found
        return stored.group, stored.version, stored.kind

    def check_namespace(self, resource_type: ResourceType, namespace: str | None, name: str) -> None:
        if not resource_type.namespaced:
            return
        namespace_obj = self.store.get(self.core_type("namespaces").key(None, namespace or ""))
        if namespace_obj is None:
            raise errors.not_found("namespaces", "", namespace or "")
        if namespace_obj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f'{errors.qualified(resource_type.plural, resource_type.group)} "{name}" is forbidden: unable to create new '
                f"content in namespace {namespace} because it is being terminated"
            )

    def after_write(self, resource_type: ResourceType) -> None:
        if resource_type.kind == "CustomResourceDefinition" and resource_type.group == "apiextensions.k8s.io":
            self.registry.sync_crds(self.crd_objects())

    def services(self) -> builtin.ServiceAllocations:
        if self.service_allocations is None:
            services = self.store.list(self.core_type("services").prefix(None))[0]
            self.service_allocations = builtin.ServiceAllocations.of(services)
        return self.service_allocations
