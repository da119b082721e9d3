"""Schemas of embedded Kubernetes types, shaped as controller-gen writes them into a CRD.

The source is the official Kubernetes OpenAPI definitions shipped by `kubernetes-validate`
(`_definitions.json`, JSON Schema with `$ref`s into `$defs`), at the Kubernetes minor that matches upstream
KubeRay's `k8s.io/api` module. `expand(definition)` inlines every `$ref` and rewrites the result into the form
upstream's generated CRDs have (controller-gen with `maxDescLen=0,generateEmbeddedObjectMeta=true`):

- no `description`, no strategic-merge-patch hints, no group-version-kind tags, single (non-null) `type`;
- no `enum` (kubernetes-validate pins `apiVersion`/`kind` with one; controller-gen ignores Go `+enum`);
- `required` sorted, as controller-gen sorts it;
- `Quantity` and `IntOrString` become `anyOf: [integer, string]` with `x-kubernetes-int-or-string`
  (plus the quantity `pattern`); an embedded `ObjectMeta` keeps only its five user-settable properties;
- kubebuilder facts that the JSON schemas lose in conversion (`+default`, `+kubebuilder:validation:*`,
  atomic struct markers inherited from an embedded `LocalObjectReference`) are added back from
  `_MARKER_FACTS`/`_MARKER_REQUIRED`/`_ATOMIC_STRUCTS`. These tables cover the types the ray.io models
  embed (the CRD tests compare every embedded schema with upstream's); a newly embedded type may need entries.

Expansion is pure and deterministic; results are cached and every call returns a fresh deep copy, so callers
may edit what they get.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from typing import Any

from kuberay.api.errors import RayApiError
from kubesemantics import quantity

# Upstream KubeRay builds against k8s.io/api v0.36 (Kubernetes 1.36).
KUBERNETES_VERSION = "1.36"

# A qualified name (optional DNS-subdomain prefix), as metav1.Condition.type and PortStatus.error declare it.
QUALIFIED_NAME_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_CORE = "io.k8s.api.core.v1."

_INT_OR_STRING: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}

# Definitions replaced whole, never expanded from the JSON schemas.
_REPLACED: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {**_INT_OR_STRING, "pattern": quantity.OPENAPI_PATTERN},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": _INT_OR_STRING,
    # generateEmbeddedObjectMeta=true: the API server prunes every other key of an embedded ObjectMeta.
    _META + "ObjectMeta": {
        "type": "object",
        "properties": {
            "annotations": _STRING_MAP,
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": _STRING_MAP,
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    },
}

# Per definition and property: keywords from kubebuilder markers in k8s.io/api and apimachinery that the
# JSON schemas do not carry.
_MARKER_FACTS: dict[str, dict[str, dict[str, Any]]] = {
    _META + "Condition": {
        "message": {"maxLength": 32768},
        "observedGeneration": {"minimum": 0},
        "reason": {"maxLength": 1024, "minLength": 1, "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
        "status": {"enum": ["True", "False", "Unknown"]},
        "type": {"maxLength": 316, "pattern": QUALIFIED_NAME_PATTERN},
    },
    _CORE + "PortStatus": {"error": {"maxLength": 316, "pattern": QUALIFIED_NAME_PATTERN}},
    _CORE + "ContainerPort": {"protocol": {"default": "TCP"}},
    _CORE + "ServicePort": {"protocol": {"default": "TCP"}},
    _CORE + "GRPCAction": {"service": {"default": ""}},
    _CORE + "FileKeySelector": {"optional": {"default": False}},
    _CORE + "AzureDiskVolumeSource": {"fsType": {"default": "ext4"}, "readOnly": {"default": False}},
    _CORE + "ISCSIVolumeSource": {"iscsiInterface": {"default": "default"}},
    _CORE + "RBDVolumeSource": {
        "keyring": {"default": "/etc/ceph/keyring"},
        "pool": {"default": "rbd"},
        "user": {"default": "admin"},
    },
    _CORE + "ScaleIOVolumeSource": {
        "fsType": {"default": "xfs"},
        "storageMode": {"default": "ThinProvisioned"},
    },
    # `name` of every object reference defaults to "" (`+default=""` on LocalObjectReference.Name, also
    # where the reference is embedded inline).
    **{
        _CORE + reference: {"name": {"default": ""}}
        for reference in (
            "LocalObjectReference",
            "ConfigMapEnvSource",
            "ConfigMapKeySelector",
            "ConfigMapProjection",
            "ConfigMapVolumeSource",
            "SecretEnvSource",
            "SecretKeySelector",
            "SecretProjection",
        )
    },
}

# Per definition: properties controller-gen lists as required (`+required`) where the JSON schemas do not.
_MARKER_REQUIRED: dict[str, tuple[str, ...]] = {_CORE + "PortStatus": ("error",)}

# Types that embed the atomic LocalObjectReference inline; controller-gen marks them atomic too.
_ATOMIC_STRUCTS = frozenset(
    _CORE + name
    for name in (
        "ConfigMapEnvSource",
        "SecretEnvSource",
        "ConfigMapVolumeSource",
        "ConfigMapProjection",
        "SecretProjection",
    )
)

# Keys of the JSON schemas that controller-gen does not write.
_DROPPED_KEYS = frozenset(
    {
        "description",
        "enum",
        "x-kubernetes-patch-merge-key",
        "x-kubernetes-patch-strategy",
        "x-kubernetes-group-version-kind",
        "x-kubernetes-unions",
    }
)


class UnknownDefinition(RayApiError, KeyError):
    """The name is not a definition of the Kubernetes OpenAPI schemas."""


@functools.cache
def _definitions() -> dict[str, Any]:
    path = resources.files("kubernetes_validate").joinpath(
        f"kubernetes-json-schema/v{KUBERNETES_VERSION}.0-local/_definitions.json"
    )
    definitions: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    return definitions


def expand(definition: str) -> dict[str, Any]:
    """The schema of a Kubernetes type (e.g. ``io.k8s.api.core.v1.PodTemplateSpec``) with every reference
    inlined, as controller-gen emits it."""
    return copy.deepcopy(_expanded(definition))


@functools.cache
def _expanded(definition: str) -> dict[str, Any]:
    if definition in _REPLACED:
        return copy.deepcopy(_REPLACED[definition])
    try:
        source = _definitions()[definition]
    except KeyError:
        raise UnknownDefinition(
            f"no Kubernetes {KUBERNETES_VERSION} definition named {definition!r}"
        ) from None
    schema = _shape(source)
    for name, facts in _MARKER_FACTS.get(definition, {}).items():
        schema["properties"][name].update(facts)
    if definition in _MARKER_REQUIRED:
        schema["required"] = sorted({*schema.get("required", ()), *_MARKER_REQUIRED[definition]})
    if definition in _ATOMIC_STRUCTS:
        schema["x-kubernetes-map-type"] = "atomic"
    return schema


def _shape(node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        schema = copy.deepcopy(_expanded(node["$ref"].rsplit("/", 1)[-1]))
        schema.update(_shape({key: value for key, value in node.items() if key != "$ref"}))
        return schema
    shaped: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "type" and isinstance(value, list):
            (value,) = [kind for kind in value if kind != "null"]
        elif key == "properties":
            value = {name: _shape(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            value = _shape(value)
        elif key == "required":
            value = sorted(value)
        shaped[key] = value
    return shaped
