"""Decoding the protobuf request bodies kubectl's typed commands send (`application/vnd.kubernetes.protobuf`).

kubectl sends JSON for anything it reads from a file, but its built-in commands (`auth can-i`,
`auth whoami`, `create token`, `create namespace|serviceaccount|configmap|secret|role|rolebinding|deployment|...`)
post protobuf, and
kubectl 1.32 does not fall back to JSON. This decodes those kinds into the JSON-shaped dicts the rest of
the server works with. A body is the `k8s\\x00` magic, then a `runtime.Unknown` envelope naming the kind and
holding the object's bytes; the field numbers below are Kubernetes' (from its generated `.proto` files).
Kinds not listed are refused with 415, as are malformed bodies with 400. Replies are always JSON, which
kubectl accepts.
"""

from __future__ import annotations

import base64
from typing import Any

from localkube.server import errors

MAGIC = b"k8s\x00"

# message -> field number -> (JSON name, type, repeated). Types: "string", "bytes", "int", "bool",
# "map<string>", "map<bytes>", "map<Extra>", or another message's name.
Field = tuple[str, str, bool]
_META = "ObjectMeta"
_MESSAGES: dict[str, dict[int, Field]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta", False), 2: ("raw", "bytes", False), 3: ("contentEncoding", "string", False), 4: ("contentType", "string", False)},
    "TypeMeta": {1: ("apiVersion", "string", False), 2: ("kind", "string", False)},
    "ObjectMeta": {
        1: ("name", "string", False), 2: ("generateName", "string", False), 3: ("namespace", "string", False),
        5: ("uid", "string", False), 6: ("resourceVersion", "string", False), 7: ("generation", "int", False),
        11: ("labels", "map<string>", False), 12: ("annotations", "map<string>", False),
        13: ("ownerReferences", "OwnerReference", True), 14: ("finalizers", "string", True),
    },
    "OwnerReference": {
        5: ("apiVersion", "string", False), 1: ("kind", "string", False), 3: ("name", "string", False),
        4: ("uid", "string", False), 6: ("controller", "bool", False), 7: ("blockOwnerDeletion", "bool", False),
    },
    "ResourceAttributes": {
        1: ("namespace", "string", False), 2: ("verb", "string", False), 3: ("group", "string", False),
        4: ("version", "string", False), 5: ("resource", "string", False), 6: ("subresource", "string", False),
        7: ("name", "string", False),
    },
    "NonResourceAttributes": {1: ("path", "string", False), 2: ("verb", "string", False)},
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes", False), 2: ("nonResourceAttributes", "NonResourceAttributes", False),
    },
    "SubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes", False), 2: ("nonResourceAttributes", "NonResourceAttributes", False),
        3: ("user", "string", False), 4: ("groups", "string", True), 5: ("extra", "map<Extra>", False), 6: ("uid", "string", False),
    },
    "ExtraValue": {1: ("items", "string", True)},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "string", False)},
    "TokenRequestSpec": {1: ("audiences", "string", True), 4: ("expirationSeconds", "int", False), 3: ("boundObjectRef", "BoundObjectReference", False)},
    "BoundObjectReference": {1: ("kind", "string", False), 2: ("apiVersion", "string", False), 3: ("name", "string", False), 4: ("uid", "string", False)},
    "TokenReviewSpec": {1: ("token", "string", False), 2: ("audiences", "string", True)},
    "ObjectReference": {
        1: ("kind", "string", False), 2: ("namespace", "string", False), 3: ("name", "string", False),
        4: ("uid", "string", False), 5: ("apiVersion", "string", False),
    },
    "LocalObjectReference": {1: ("name", "string", False)},
    "NamespaceSpec": {1: ("finalizers", "string", True)},
    "Preconditions": {1: ("uid", "string", False), 2: ("resourceVersion", "string", False)},
    "PolicyRule": {
        1: ("verbs", "string", True), 2: ("apiGroups", "string", True), 3: ("resources", "string", True),
        4: ("resourceNames", "string", True), 5: ("nonResourceURLs", "string", True),
    },
    "Subject": {1: ("kind", "string", False), 2: ("apiGroup", "string", False), 3: ("name", "string", False), 4: ("namespace", "string", False)},
    "RoleRef": {1: ("apiGroup", "string", False), 2: ("kind", "string", False), 3: ("name", "string", False)},
    # The kinds a body may carry (see _KINDS).
    "Role": {1: ("metadata", _META, False), 2: ("rules", "PolicyRule", True)},
    "ClusterRole": {1: ("metadata", _META, False), 2: ("rules", "PolicyRule", True)},
    "RoleBinding": {1: ("metadata", _META, False), 2: ("subjects", "Subject", True), 3: ("roleRef", "RoleRef", False)},
    "ClusterRoleBinding": {1: ("metadata", _META, False), 2: ("subjects", "Subject", True), 3: ("roleRef", "RoleRef", False)},
    "SelfSubjectAccessReview": {1: ("metadata", _META, False), 2: ("spec", "SelfSubjectAccessReviewSpec", False)},
    "SubjectAccessReview": {1: ("metadata", _META, False), 2: ("spec", "SubjectAccessReviewSpec", False)},
    "SelfSubjectRulesReview": {1: ("metadata", _META, False), 2: ("spec", "SelfSubjectRulesReviewSpec", False)},
    "SelfSubjectReview": {1: ("metadata", _META, False)},
    "TokenRequest": {1: ("metadata", _META, False), 2: ("spec", "TokenRequestSpec", False)},
    "TokenReview": {1: ("metadata", _META, False), 2: ("spec", "TokenReviewSpec", False)},
    "ServiceAccount": {
        1: ("metadata", _META, False), 2: ("secrets", "ObjectReference", True),
        3: ("imagePullSecrets", "LocalObjectReference", True), 4: ("automountServiceAccountToken", "bool", False),
    },
    "Namespace": {1: ("metadata", _META, False), 2: ("spec", "NamespaceSpec", False)},
    "ConfigMap": {1: ("metadata", _META, False), 4: ("immutable", "bool", False), 2: ("data", "map<string>", False), 3: ("binaryData", "map<bytes>", False)},
    "Secret": {
        1: ("metadata", _META, False), 5: ("immutable", "bool", False), 2: ("data", "map<bytes>", False),
        4: ("stringData", "map<string>", False), 3: ("type", "string", False),
    },
    # `kubectl create deployment`: the fields it sets (a template of named containers, image, command, ports).
    "Deployment": {1: ("metadata", _META, False), 2: ("spec", "DeploymentSpec", False)},
    "DeploymentSpec": {
        1: ("replicas", "int", False), 2: ("selector", "LabelSelector", False), 3: ("template", "PodTemplateSpec", False),
        5: ("minReadySeconds", "int", False), 6: ("revisionHistoryLimit", "int", False), 7: ("paused", "bool", False),
        9: ("progressDeadlineSeconds", "int", False),
    },
    "LabelSelector": {1: ("matchLabels", "map<string>", False), 2: ("matchExpressions", "LabelSelectorRequirement", True)},
    "LabelSelectorRequirement": {1: ("key", "string", False), 2: ("operator", "string", False), 3: ("values", "string", True)},
    "PodTemplateSpec": {1: ("metadata", _META, False), 2: ("spec", "PodSpec", False)},
    "PodSpec": {2: ("containers", "Container", True), 3: ("restartPolicy", "string", False), 8: ("serviceAccountName", "string", False)},
    "Container": {
        1: ("name", "string", False), 2: ("image", "string", False), 3: ("command", "string", True),
        4: ("args", "string", True), 5: ("workingDir", "string", False), 6: ("ports", "ContainerPort", True),
    },
    "ContainerPort": {
        1: ("name", "string", False), 2: ("hostPort", "int", False), 3: ("containerPort", "int", False),
        4: ("protocol", "string", False), 5: ("hostIP", "string", False),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int", False), 2: ("preconditions", "Preconditions", False),
        3: ("orphanDependents", "bool", False), 4: ("propagationPolicy", "string", False), 5: ("dryRun", "string", True),
    },
}  # fmt: skip


_KINDS = frozenset(
    {
        "SelfSubjectAccessReview", "SubjectAccessReview", "SelfSubjectRulesReview", "SelfSubjectReview",
        "TokenRequest", "TokenReview", "ServiceAccount", "Namespace", "ConfigMap", "Secret", "DeleteOptions",
        "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "Deployment",
    }
)  # fmt: skip


class _Malformed(ValueError):
    pass


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise _Malformed("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited and fixed fields."""
    out: list[tuple[int, int | bytes]] = []
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            value, position = _varint(data, position)
            out.append((number, value))
        elif wire_type == 2:
            length, position = _varint(data, position)
            out.append((number, data[position : position + length]))
            position += length
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            out.append((number, data[position : position + width]))
            position += width
        else:
            raise _Malformed(f"unsupported wire type {wire_type}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, value: int | bytes) -> Any:
    if kind == "string":
        assert isinstance(value, bytes)
        return value.decode()
    if kind == "bytes":
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode()
    if kind == "int":
        assert isinstance(value, int)
        return _signed(value)
    if kind == "bool":
        return bool(value)
    raise _Malformed(f"unknown scalar type {kind}")


def _message(name: str, data: bytes) -> dict[str, Any]:
    schema = _MESSAGES[name]
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        field, kind, repeated = schema[number]
        if kind.startswith("map<"):
            assert isinstance(value, bytes)
            entry = dict(_fields(value))
            key = entry.get(1, b"")
            raw = entry.get(2, b"")
            assert isinstance(key, bytes)
            element = kind[4:-1]
            decoded: Any = (
                _message("ExtraValue", raw)["items"]
                if element == "Extra" and isinstance(raw, bytes)
                else _scalar(element, raw)
            )
            out.setdefault(field, {})[key.decode()] = decoded
            continue
        if kind in _MESSAGES:
            assert isinstance(value, bytes)
            decoded = _message(kind, value)
        else:
            decoded = _scalar(kind, value)
        if repeated:
            out.setdefault(field, []).append(decoded)
        elif decoded != "":
            # Go omits empty strings from JSON (omitempty); other zero values may be meaningful pointers.
            out[field] = decoded
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded Kubernetes object; 415 for kinds this server cannot read."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the protobuf body does not start with the Kubernetes magic number")
    try:
        envelope = _message("Unknown", body[len(MAGIC) :])
        type_meta = envelope.get("typeMeta") or {}
        kind = type_meta.get("kind", "")
        if kind not in _KINDS:
            raise errors.unsupported_media_type(["application/json", "application/yaml"])
        obj = _message(kind, base64.b64decode(envelope.get("raw", "")))
    except (_Malformed, UnicodeDecodeError, AssertionError) as exc:
        raise errors.bad_request(f"the protobuf body could not be decoded: {exc}") from exc
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}
