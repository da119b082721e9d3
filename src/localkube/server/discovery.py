"""API discovery: the aggregated v2 documents kubectl asks for first, and the legacy per-group documents.

Both are derived from the registry and cached until the registry changes (a CRD is written). Aggregated
discovery (`Accept: ...;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`) answers `/api` and `/apis`
with everything in two requests; older clients (the official Python client's dynamic client) walk
`/apis/<group>` and `/apis/<group>/<version>`.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import orjson

from localkube.server.registry import ALL_VERBS, Registry, ResourceType

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "binding": ["create"],
    "finalize": ["update"],
    "token": ["create"],
    "exec": ["create", "get"],
    "attach": ["create", "get"],
    "portforward": ["create", "get"],
}
_OPTIONS_KINDS = {
    "exec": "PodExecOptions",
    "attach": "PodAttachOptions",
    "portforward": "PodPortForwardOptions",
}


def _subresource_kind(resource_type: ResourceType, subresource: str) -> tuple[str, str, str]:
    """(group, version, kind) of what a subresource answers with."""
    if subresource == "scale":
        return "autoscaling", "v1", "Scale"
    if subresource == "binding":
        return "", "v1", "Binding"
    if subresource == "token":
        return "authentication.k8s.io", "v1", "TokenRequest"
    if subresource in _OPTIONS_KINDS:
        return "", "v1", _OPTIONS_KINDS[subresource]
    return resource_type.group, resource_type.version, resource_type.kind


def wants_aggregated(accept: str) -> bool:
    return "as=APIGroupDiscoveryList" in accept and "v=v2" in accept


class Discovery:
    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._generation = -1
        self._cache: dict[str, bytes] = {}

    def _cached(self, key: str, build: Any) -> bytes:
        if self._generation != self._registry.generation:
            self._cache.clear()
            self._generation = self._registry.generation
        if key not in self._cache:
            self._cache[key] = orjson.dumps(build())
        return self._cache[key]

    # -- aggregated -------------------------------------------------------------------------------------

    def aggregated(self, core: bool) -> bytes:
        return self._cached(f"aggregated:{core}", lambda: self._aggregated(core))

    def _aggregated(self, core: bool) -> dict[str, Any]:
        items = []
        for group, versions in self._registry.groups():
            if (group == "") != core:
                continue
            items.append(
                {
                    "metadata": {"name": group, "creationTimestamp": None},
                    "versions": [
                        {
                            "version": version,
                            "resources": [
                                self._aggregated_resource(t) for t in self._registry.resources(group, version)
                            ],
                            "freshness": "Current",
                        }
                        for version in versions
                    ],
                }
            )
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": items,
        }

    @staticmethod
    def _aggregated_resource(resource_type: ResourceType) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "resource": resource_type.plural,
            "responseKind": {
                "group": resource_type.group,
                "version": resource_type.version,
                "kind": resource_type.kind,
            },
            "scope": "Namespaced" if resource_type.namespaced else "Cluster",
            "singularResource": resource_type.singular,
            "verbs": list(resource_type.verbs),
        }
        if resource_type.short_names:
            entry["shortNames"] = list(resource_type.short_names)
        if resource_type.categories:
            entry["categories"] = list(resource_type.categories)
        if resource_type.subresources:
            entry["subresources"] = [
                {
                    "subresource": sub,
                    "responseKind": dict(
                        zip(("group", "version", "kind"), _subresource_kind(resource_type, sub), strict=True)
                    ),
                    "verbs": _SUBRESOURCE_VERBS[sub],
                }
                for sub in sorted(resource_type.subresources)
            ]
        return entry

    # -- legacy -----------------------------------------------------------------------------------------

    def api_versions(self) -> bytes:
        return self._cached(
            "versions",
            lambda: {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
            },
        )

    def group_list(self) -> bytes:
        return self._cached(
            "groups",
            lambda: {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    self._group(group, versions) for group, versions in self._registry.groups() if group
                ],
            },
        )

    def group(self, name: str) -> bytes | None:
        versions = dict(self._registry.groups()).get(name)
        if not name or versions is None:
            return None
        return self._cached(
            f"group:{name}", lambda: {"kind": "APIGroup", "apiVersion": "v1", **self._group(name, versions)}
        )

    @staticmethod
    def _group(group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def resource_list(self, group: str, version: str) -> bytes | None:
        types = self._registry.resources(group, version)
        if not types:
            return None
        return self._cached(
            f"resources:{group}/{version}", lambda: self._resource_list(group, version, types)
        )

    @staticmethod
    def _resource_list(group: str, version: str, types: list[ResourceType]) -> dict[str, Any]:
        resources: list[dict[str, Any]] = []
        for t in types:
            entry: dict[str, Any] = {
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": list(_CUSTOM_VERBS if t.custom and t.verbs == ALL_VERBS else t.verbs),
            }
            if t.custom and t.storage_version:
                entry["storageVersionHash"] = storage_version_hash(t.group, t.storage_version, t.kind)
            if t.short_names:
                entry["shortNames"] = list(t.short_names)
            if t.categories:
                entry["categories"] = list(t.categories)
            resources.append(entry)
            # A custom resource's status comes before its scale, as the CRD handler lists them.
            for sub in sorted(t.subresources, reverse=t.custom):
                sub_group, sub_version, sub_kind = _subresource_kind(t, sub)
                sub_entry: dict[str, Any] = {
                    "name": f"{t.plural}/{sub}",
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": sub_kind,
                    "verbs": _SUBRESOURCE_VERBS[sub],
                }
                if (sub_group, sub_version) != (group, version):
                    sub_entry["group"], sub_entry["version"] = sub_group, sub_version
                resources.append(sub_entry)
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }


# The order the CRD handler lists a custom resource's verbs in.
_CUSTOM_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """The API server's hash of a resource's storage version: the first 8 bytes of the SHA-256 of
    `group/version/kind`, in base64."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()
