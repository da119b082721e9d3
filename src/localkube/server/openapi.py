"""OpenAPI v3: the index at `/openapi/v3` and one document per group-version, for kubectl.

kubectl reads these for two things: `kubectl apply` checks that a kind's PATCH operation declares the
`fieldValidation` parameter (then it leaves field validation to the server), and `kubectl explain` walks
the kind's schema from the GET operation that carries its `x-kubernetes-group-version-kind`.

Built-in schemas come from kubernetes-validate's Kubernetes 1.32 definitions (JSON schema, rewritten into
OpenAPI form: `$ref`s into `components/schemas`, nullable type lists collapsed). Custom resources use
their CRD version's `openAPIV3Schema`, with `metadata` pointing at ObjectMeta as on a real server.
Documents are built on first request and cached until the registry changes.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson

from localkube.server.registry import Registry, ResourceType

KUBERNETES_VERSION = "1.32.0"
_REF_PREFIX = "#/$defs/"
_COMPONENT_PREFIX = "#/components/schemas/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
_PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
_META_DESCRIPTIONS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "metadata": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}  # fmt: skip


@cache
def _definitions() -> dict[str, Any]:
    root = (
        Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"v{KUBERNETES_VERSION}-local"
    )
    definitions: dict[str, Any] = orjson.loads((root / "_definitions.json").read_bytes())["$defs"]
    return definitions


@cache
def _definition_by_kind() -> dict[tuple[str, str, str], str]:
    found: dict[tuple[str, str, str], str] = {}
    for name, definition in _definitions().items():
        for gvk in definition.get("x-kubernetes-group-version-kind") or []:
            found.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")), name)
    return found


def _convert(node: Any) -> Any:
    """A JSON-schema node of kubernetes-validate rewritten as an OpenAPI v3 schema node."""
    if isinstance(node, list):
        return [_convert(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if types:
                converted["type"] = types[0]
        elif key == "$ref":
            continue
        elif key in ("properties", "patternProperties"):
            converted[key] = {name: _convert(child) for name, child in value.items()}
        else:
            converted[key] = _convert(value)
    if "$ref" in node:
        target = _COMPONENT_PREFIX + str(node["$ref"]).removeprefix(_REF_PREFIX)
        if converted:
            converted["allOf"] = [{"$ref": target}]
        else:
            converted["$ref"] = target
    return converted


def _references(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            into.add(ref.removeprefix(_REF_PREFIX))
        for value in node.values():
            _references(value, into)
    elif isinstance(node, list):
        for value in node:
            _references(value, into)


def _closure(names: set[str]) -> set[str]:
    definitions = _definitions()
    seen: set[str] = set()
    pending = [name for name in names if name in definitions]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        found: set[str] = set()
        _references(definitions[name], found)
        pending.extend(found - seen)
    return seen


def _component_name(resource_type: ResourceType, suffix: str = "") -> str:
    if not resource_type.custom:
        found = _definition_by_kind().get(
            (resource_type.group, resource_type.version, resource_type.kind + suffix)
        )
        if found:
            return found
    reversed_group = ".".join(reversed(resource_type.group.split("."))) if resource_type.group else "core"
    return f"{reversed_group}.{resource_type.version}.{resource_type.kind}{suffix}"


def _gvk(resource_type: ResourceType) -> dict[str, str]:
    return {"group": resource_type.group, "version": resource_type.version, "kind": resource_type.kind}


def _custom_schema(resource_type: ResourceType) -> dict[str, Any]:
    schema: dict[str, Any] = orjson.loads(orjson.dumps(resource_type.schema or {"type": "object"}))
    properties = schema.setdefault("properties", {})
    for field in ("apiVersion", "kind"):
        properties.setdefault(field, {"type": "string"}).setdefault("description", _META_DESCRIPTIONS[field])
    properties["metadata"] = {
        "allOf": [{"$ref": _COMPONENT_PREFIX + _OBJECT_META}],
        "description": _META_DESCRIPTIONS["metadata"],
    }
    schema.setdefault("type", "object")
    schema["x-kubernetes-group-version-kind"] = [_gvk(resource_type)]
    return schema


def _list_schema(resource_type: ResourceType, item: str) -> dict[str, Any]:
    return {
        "description": f"{resource_type.kind}List is a list of {resource_type.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": _META_DESCRIPTIONS["apiVersion"]},
            "items": {"type": "array", "items": {"$ref": _COMPONENT_PREFIX + item}},
            "kind": {"type": "string", "description": _META_DESCRIPTIONS["kind"]},
            "metadata": {"allOf": [{"$ref": _COMPONENT_PREFIX + _LIST_META}]},
        },
        "x-kubernetes-group-version-kind": [{**_gvk(resource_type), "kind": resource_type.list_kind}],
    }


def _response(component: str) -> dict[str, Any]:
    return {
        "200": {
            "description": "OK",
            "content": {
                media: {"schema": {"$ref": _COMPONENT_PREFIX + component}}
                for media in ("application/json", "application/yaml")
            },
        },
        "401": {"description": "Unauthorized"},
    }


def _query_parameter(name: str, description: str, type_: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": type_, "uniqueItems": True},
    }


_WRITE_PARAMETERS = [
    _query_parameter("dryRun", "When present, indicates that modifications should not be persisted."),
    _query_parameter("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
    _query_parameter("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict."),
]  # fmt: skip
_PATCH_MEDIA_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def _operations(
    resource_type: ResourceType, item: str, list_item: str, subresource: str = ""
) -> dict[str, dict[str, Any]]:
    gvk = _gvk(resource_type)
    suffix = subresource.capitalize()
    base = f"{resource_type.kind}{suffix}"

    def operation(action: str, verb: str, component: str, **extra: Any) -> dict[str, Any]:
        return {
            "operationId": f"{verb}{base}",
            "responses": _response(component),
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            **extra,
        }

    body = {"content": {"*/*": {"schema": {"$ref": _COMPONENT_PREFIX + item}}}, "required": True}
    # kubectl apply sends a strategic merge patch only where the PATCH operation lists it.
    media_types = [m for m in _PATCH_MEDIA_TYPES if not (resource_type.custom and "strategic" in m)]
    patch_body = {
        "content": {media: {"schema": {"$ref": _COMPONENT_PREFIX + _PATCH}} for media in media_types},
        "required": True,
    }
    single = {
        "get": operation("get", "read", item),
        "put": operation("put", "replace", item, requestBody=body, parameters=_WRITE_PARAMETERS),
        "patch": operation(
            "patch",
            "patch",
            item,
            requestBody=patch_body,
            parameters=[
                *_WRITE_PARAMETERS,
                _query_parameter("force", "Force is going to force Apply requests.", "boolean"),
            ],
        ),
    }
    if subresource:
        return {"single": single}
    single["delete"] = operation("delete", "delete", _STATUS)
    collection = {
        "get": operation("list", "list", list_item),
        "post": operation("post", "create", item, requestBody=body, parameters=_WRITE_PARAMETERS),
        "delete": operation("deletecollection", "deleteCollectionOf", _STATUS),
    }
    return {"single": single, "collection": collection}


class OpenApi:
    """The documents, cached: built-in group-versions forever, custom ones until their resources change."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._documents: dict[str, tuple[tuple[int, ...], bytes, str]] = {}

    def _keys(self) -> list[str]:
        return [
            f"apis/{group}/{version}" if group else f"api/{version}"
            for group, versions in self._registry.groups()
            for version in versions
        ]

    def index(self) -> bytes:
        paths = {
            key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={self._entry(key)[1]}"}
            for key in self._keys()
        }
        return orjson.dumps({"paths": paths})

    def document(self, key: str) -> bytes | None:
        if key not in self._keys():
            return None
        return self._entry(key)[0]

    def _entry(self, key: str) -> tuple[bytes, str]:
        parts = key.split("/")
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        types = self._registry.resources(group, version)
        # The types' identities change exactly when a CRD of this group-version is rewritten.
        signature = tuple(id(t) for t in types)
        cached = self._documents.get(key)
        if cached is None or cached[0] != signature:
            document = orjson.dumps(self._group_version(group, version, types))
            digest = hashlib.sha512(document).hexdigest()[:64].upper()
            cached = self._documents[key] = (signature, document, digest)
        return cached[1], cached[2]

    def _group_version(self, group: str, version: str, types: list[ResourceType]) -> dict[str, Any]:
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        paths: dict[str, Any] = {}
        schemas: dict[str, Any] = {}
        wanted = {_OBJECT_META, _LIST_META, _STATUS, _PATCH}
        for resource_type in types:
            if resource_type.virtual:
                continue
            item = _component_name(resource_type)
            list_item = _component_name(resource_type, "List")
            if resource_type.custom:
                schemas[item] = _custom_schema(resource_type)
                schemas[list_item] = _list_schema(resource_type, item)
            else:
                wanted |= {item, list_item}
            base = (
                f"{prefix}/namespaces/{{namespace}}/{resource_type.plural}"
                if resource_type.namespaced
                else f"{prefix}/{resource_type.plural}"
            )
            operations = _operations(resource_type, item, list_item)
            paths[base] = operations["collection"]
            paths[f"{base}/{{name}}"] = operations["single"]
            if resource_type.namespaced:
                paths[f"{prefix}/{resource_type.plural}"] = {"get": operations["collection"]["get"]}
            if resource_type.has_status():
                paths[f"{base}/{{name}}/status"] = _operations(resource_type, item, list_item, "status")[
                    "single"
                ]
        definitions = _definitions()
        for name in _closure(wanted):
            schemas[name] = _convert(definitions[name])
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}"},
            "paths": paths,
            "components": {"schemas": schemas},
        }
