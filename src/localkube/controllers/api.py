"""The REST layer's semantics for in-process controllers, addressed by store key.

Controllers that delete or edit objects the way a client would (the garbage collector, the Job
controller) go through `Resources`, so finalizers, propagation policies and graceful pod deletion behave
exactly as they do for an HTTP client. Writes that a real cluster makes through privileged paths (a
binding, a kubelet's status) go to the store directly and do not use this.
"""

from __future__ import annotations

from typing import Any

from localkube.controllers.errors import ControllerManagerError
from localkube.server.errors import ApiError
from localkube.server.registry import ResourceType
from localkube.server.rest import Resources


class UnknownResource(ControllerManagerError, LookupError):
    """A store key that names no served resource."""


class ControllerApi:
    def __init__(self, resources: Resources) -> None:
        self._resources = resources

    def _locate(self, key: str) -> tuple[ResourceType, str | None, str]:
        # /registry/<group or core>/<plural>/[<namespace>/]<name>
        parts = key.split("/")
        if len(parts) < 5 or parts[1] != "registry":
            raise UnknownResource(key)
        group = "" if parts[2] == "core" else parts[2]
        resource_type = self._resources.registry.by_resource(group, parts[3])
        if resource_type is None:
            raise UnknownResource(key)
        if resource_type.namespaced:
            return resource_type, parts[4], "/".join(parts[5:])
        return resource_type, None, "/".join(parts[4:])

    def delete(self, key: str, propagation: str = "Background") -> None:
        """Deletes like `kubectl delete --cascade=<propagation>`; an object already gone is fine."""
        resource_type, namespace, name = self._locate(key)
        try:
            self._resources.delete(resource_type, namespace, name, {"propagationPolicy": propagation}, {})
        except ApiError as err:
            if err.code != 404:
                raise

    def finish_terminating_namespace(self, namespace: str) -> None:
        """Removes the namespace if it is Terminating and its last object is gone."""
        self._resources.finish_terminating_namespace(namespace)

    def update(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Replaces the object (optimistic on its resourceVersion), as a client's PUT does."""
        resource_type, namespace, name = self._locate(key)
        return self._resources.update(resource_type, namespace, name, obj, None, {})

    def update_status(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        resource_type, namespace, name = self._locate(key)
        return self._resources.update(resource_type, namespace, name, obj, "status", {})

    def create(self, group: str, plural: str, namespace: str | None, obj: dict[str, Any]) -> dict[str, Any]:
        resource_type = self._resources.registry.by_resource(group, plural)
        if resource_type is None:
            raise UnknownResource(f"{plural}.{group}")
        return self._resources.create(resource_type, namespace, obj, {})
