"""The create verb: the namespace must exist and not be terminating; `generateName`; uid,
creationTimestamp, generation 1; status dropped where a status subresource owns it; kind defaults; admission;
dryRun=All stores nothing. `seed` creates what a fresh cluster starts with."""

from __future__ import annotations

import random
import uuid
from typing import Any

from kubesemantics.names import generated_name
from localkube.server import builtin, crds, errors, patching
from localkube.server.registry import ResourceType
from localkube.server.rest.common import (
    Core,
    Query,
    check_identity,
    clone,
    is_dry_run,
    metadata_of,
    now,
)
from localkube.storage import AlreadyExists

_RNG = random.SystemRandom()
# The built-in kinds whose registry strategy starts metadata.generation at 1 (and so counts spec changes).
_TRACKS_GENERATION = frozenset(
    {
        ("", "Pod"), ("", "PodTemplate"), ("", "ReplicationController"),
        ("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
        ("batch", "Job"), ("batch", "CronJob"),
        ("networking.k8s.io", "NetworkPolicy"), ("networking.k8s.io", "Ingress"), ("networking.k8s.io", "IngressClass"),
        ("discovery.k8s.io", "EndpointSlice"), ("policy", "PodDisruptionBudget"),
        ("autoscaling", "HorizontalPodAutoscaler"), ("scheduling.k8s.io", "PriorityClass"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"), ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("resource.k8s.io", "ResourceSlice"), ("resource.k8s.io", "DeviceClass"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        *(
            ("admissionregistration.k8s.io", kind)
            for kind in (
                "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
            )
        ),
    }
)  # fmt: skip


class Creates:
    """create, and seeding a fresh cluster."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def seed(self, objects: list[dict[str, Any]]) -> None:
        """Creates each object that does not exist yet (what a fresh cluster starts with)."""
        for obj in objects:
            group, _, version = obj["apiVersion"].rpartition("/")
            resource_type = self.core.registry.by_kind(group, version, obj["kind"])
            assert resource_type is not None, obj["kind"]
            namespace = obj["metadata"].get("namespace")
            if self.core.store.get(resource_type.key(namespace, obj["metadata"]["name"])) is None:
                self.create(resource_type, namespace, clone(obj), {})

    def create(
        self, resource_type: ResourceType, namespace: str | None, obj: dict[str, Any], query: Query
    ) -> dict[str, Any]:
        registry_set = [
            path
            for path in builtin.SET_BY_REGISTRY.get(resource_type.kind, ())
            if not resource_type.custom
            # A status the request carries is dropped all the same (a status subresource owns it).
            if _value_at(obj, path) is None or path == ("status",)
        ]
        obj = self._prepare_create(resource_type, namespace, obj)
        obj = self.core.admit(resource_type, obj, None, query)
        # ResourceQuota is the last of admission: it sees the object as it will be stored.
        charges = self.core.plugins.charge(resource_type, namespace, obj)
        if query.get("fieldManager") and "managedFields" not in obj["metadata"]:
            obj = self._record_creator(resource_type, obj, query["fieldManager"], registry_set)
        name = obj["metadata"]["name"]
        if is_dry_run(query):
            if self.core.store.get(resource_type.key(namespace, name)) is not None:
                raise errors.already_exists(resource_type.plural, resource_type.group, name)
            return self.core.output(resource_type, obj)
        try:
            created = self.core.store.create(resource_type.key(namespace, name), obj)
        except AlreadyExists:
            raise errors.already_exists(resource_type.plural, resource_type.group, name) from None
        self.core.plugins.record(charges)
        self.core.after_write(resource_type)
        return self.core.output(resource_type, created)

    @staticmethod
    def _record_creator(
        resource_type: ResourceType, obj: dict[str, Any], manager: str, registry_set: list[tuple[str, ...]]
    ) -> dict[str, Any]:
        """`obj` with its creator owning what it set: not what the registry set after the field manager ran."""
        if not registry_set:
            return patching.record(resource_type, None, obj, manager, None)
        managed = patching.record(resource_type, None, _without(obj, registry_set), manager, None)[
            "metadata"
        ].get("managedFields")
        if managed:
            obj["metadata"]["managedFields"] = managed
        return obj

    def _prepare_create(
        self, resource_type: ResourceType, namespace: str | None, obj: dict[str, Any]
    ) -> dict[str, Any]:
        check_identity(resource_type, obj)
        obj = self.core.stored_form(resource_type, obj)
        metadata = metadata_of(obj)
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
        self.core.check_namespace(
            resource_type, namespace, str(metadata.get("name") or metadata.get("generateName") or "")
        )
        requested_name = str(metadata.get("name") or metadata.get("generateName") or "")
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = generated_name(str(metadata["generateName"]), _RNG)
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = now()
        for server_owned in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            metadata.pop(server_owned, None)
        if resource_type.custom or (resource_type.group, resource_type.kind) in _TRACKS_GENERATION:
            metadata["generation"] = 1
        else:
            metadata.pop("generation", None)
        if resource_type.has_status():
            obj.pop("status", None)
        # Built-in mutating admission (LimitRanger, Priority) comes before the kind's defaults here.
        self.core.plugins.mutate_create(resource_type, namespace, obj, requested_name)
        builtin.default_on_create(resource_type.kind, obj, self.core.services)
        builtin.normalize_on_write(resource_type.kind, obj)
        if resource_type.kind == "CustomResourceDefinition":
            crds.set_status(obj)
        return obj


def _without(obj: dict[str, Any], paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """`obj` without the values at `paths`, leaving `obj` whole: only the maps along the paths are copied
    (a pod's create drops its status this way without copying its spec)."""
    view = dict(obj)
    for path in paths:
        parent = view
        for key in path[:-1]:
            child = parent.get(key)
            if not isinstance(child, dict):
                break
            copied = dict(child)
            parent[key] = copied
            parent = copied
        else:
            parent.pop(path[-1], None)
    return view


def _value_at(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value
