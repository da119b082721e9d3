"""Which API resource an object belongs to, and how an object is named: `Resource` and `ObjectKey`.

A `Resource` is everything the client needs to build a URL (group/version, plural, namespaced or not) and
everything the cache needs to recognise owners (apiVersion, kind). Built-in kinds the runtime itself uses
are defined here; other kinds (the ray.io CRDs) are defined by their owners with the same class, so this
module stays free of Ray.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kuberay.runtime.errors import ControllerRuntimeError


class InvalidName(ControllerRuntimeError, ValueError):
    """A namespace or name that cannot be one segment of a URL path."""


def path_segment(value: str, what: str) -> str:
    """`value` as one segment of a URL path, refused as client-go refuses it (IsValidPathSegmentName), so
    that no name a caller passes on (`..`, `a/b`) names another URL; anything else a URL cannot carry
    as it is (a NUL, `?`, `#`) percent-encoded, so it stays inside its segment. Valid names are unchanged."""
    if value in (".", ".."):
        raise InvalidName(f"invalid {what} {value!r}: may not be {value!r}")
    for forbidden in ("/", "%"):
        if forbidden in value:
            raise InvalidName(f"invalid {what} {value!r}: may not contain {forbidden!r}")
    return urllib.parse.quote(value, safe=":@!$&'()*+,;=")


@dataclass(frozen=True)
class Resource:
    api_version: str  # "v1" or "<group>/<version>"
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection (no name) or of one object; `namespace=None` means all namespaces."""
        parts = ["/api", self.api_version] if not self.group else ["/apis", self.group, self.version]
        if self.namespaced and namespace is not None:
            parts += ["namespaces", path_segment(namespace, "namespace")]
        elif not self.namespaced and namespace:
            raise ValueError(f"{self.kind} is cluster-scoped; got namespace {namespace!r}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"{self.kind}: metadata.name must not be empty")
            parts.append(path_segment(name, f"{self.kind} name"))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


class ObjectKey(NamedTuple):
    """The name of an object: namespace ("" for cluster-scoped kinds) and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectKey:
        metadata = obj.get("metadata") or {}
        return cls(metadata.get("namespace") or "", metadata.get("name") or "")


POD = Resource("v1", "Pod", "pods")
SERVICE = Resource("v1", "Service", "services")
SECRET = Resource("v1", "Secret", "secrets")
CONFIG_MAP = Resource("v1", "ConfigMap", "configmaps")
SERVICE_ACCOUNT = Resource("v1", "ServiceAccount", "serviceaccounts")
PERSISTENT_VOLUME_CLAIM = Resource("v1", "PersistentVolumeClaim", "persistentvolumeclaims")
EVENT = Resource("v1", "Event", "events")
NAMESPACE = Resource("v1", "Namespace", "namespaces", namespaced=False)
NODE = Resource("v1", "Node", "nodes", namespaced=False)
JOB = Resource("batch/v1", "Job", "jobs")
LEASE = Resource("coordination.k8s.io/v1", "Lease", "leases")
INGRESS = Resource("networking.k8s.io/v1", "Ingress", "ingresses")
NETWORK_POLICY = Resource("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies")
ROLE = Resource("rbac.authorization.k8s.io/v1", "Role", "roles")
ROLE_BINDING = Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings")
CUSTOM_RESOURCE_DEFINITION = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False
)
