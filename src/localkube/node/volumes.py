"""What a pod's volumes hold, computed as the kubelet computes it: a pure module (no I/O; the store is read
through the `read` callable and tokens come from the `issue_token` callable, both passed in).

`project(volume, ...)` gives the files of a `configMap`, `secret`, `downwardAPI` or `projected` volume as
relative path -> `File` (bytes and mode): every key of the source, or only its `items` (key -> path, with
per-item modes), `defaultMode` (0644 unless set) for the rest; a projected volume merges its sources in
order. A ConfigMap or Secret that is missing (or lacks an item's key) fails the mount with the kubelet's
message unless `optional`, and an optional one that is missing projects nothing. Downward API files hold a
field's value; `metadata.labels` and `metadata.annotations` as a whole are `key="value"` lines sorted by
key, as the kubelet writes them. A service-account token is a bound token for the pod's ServiceAccount
with the requested `audience` and `expirationSeconds` (at least 600, default 3600).

`api_access_volume()` is the volume the ServiceAccount admission plugin gives every pod unless
`automountServiceAccountToken` is false on the pod (or, when the pod does not say, on its ServiceAccount):
`token`, `ca.crt` and `namespace` under /var/run/secrets/kubernetes.io/serviceaccount, read-only.
"""

from __future__ import annotations

import base64
import json
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from localkube.node.environment import ContainerConfigError, field_value, resource_value
from localkube.node.errors import NodeError

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
API_ACCESS_VOLUME = "kube-api-access"
DEFAULT_MODE = 0o644
# What the ServiceAccount admission plugin asks for: a little over an hour, so that clients see it is
# bound; the kubelet refreshes it well before then.
API_ACCESS_EXPIRATION = 3607
MINIMUM_EXPIRATION = 600
# A volume of these kinds holds files the kubelet writes; it is always mounted read-only.
PROJECTED_KINDS = ("configMap", "secret", "downwardAPI", "projected")
# localkube's own source inside the api-access volume: the cluster's CA certificate (a real cluster projects
# the kube-root-ca.crt ConfigMap, which localkube does not publish).
CLUSTER_CA_SOURCE = "localkubeClusterCA"


class VolumeError(NodeError, ValueError):
    """A volume cannot be set up (kubelet: the FailedMount event, the pod stays ContainerCreating)."""


@dataclass(frozen=True)
class File:
    content: bytes
    mode: int


@dataclass(frozen=True)
class Token:
    """A service-account token and its expiry (Unix seconds)."""

    value: str
    expiry: int


# (namespace, service account name, service account uid, expiration seconds, audiences) -> token
IssueToken = Callable[[str, str, str, int, list[str]], Token]
Read = Callable[[str, str, str], dict[str, Any] | None]


@dataclass(frozen=True)
class Sources:
    """Where volume contents come from."""

    read: Read
    issue_token: IssueToken | None
    cluster_ca: bytes
    allocatable: Mapping[str, str]


def api_access_volume() -> dict[str, Any]:
    """The projected volume of the pod's service-account credentials (see the module docstring)."""
    return {
        "name": API_ACCESS_VOLUME,
        "projected": {
            "defaultMode": DEFAULT_MODE,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": API_ACCESS_EXPIRATION, "path": "token"}},
                {CLUSTER_CA_SOURCE: {"path": "ca.crt"}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
            ],
        },
    }  # fmt: skip


def automounts_token(pod: Mapping[str, Any], account: Mapping[str, Any] | None) -> bool:
    """Whether the pod gets its service-account credentials: the pod's setting, else its ServiceAccount's,
    else yes."""
    own = (pod.get("spec") or {}).get("automountServiceAccountToken")
    if own is not None:
        return bool(own)
    return (account or {}).get("automountServiceAccountToken") is not False


def kind_of(volume: Mapping[str, Any]) -> str:
    """The volume's source kind (`emptyDir`, `configMap`, ...), or "" when it names none."""
    return next((k for k in volume if k != "name"), "")


def project(volume: Mapping[str, Any], pod: Mapping[str, Any], sources: Sources) -> dict[str, File]:
    """The files of a volume of one of PROJECTED_KINDS (see the module docstring)."""
    kind = kind_of(volume)
    spec = volume[kind] or {}
    files: dict[str, File] = {}
    if kind == "projected":
        mode = int(spec.get("defaultMode", DEFAULT_MODE))
        for source in spec.get("sources") or []:
            for source_kind, source_spec in source.items():
                files.update(_source(source_kind, source_spec or {}, mode, pod, sources))
        return files
    return _source(kind, spec, int(spec.get("defaultMode", DEFAULT_MODE)), pod, sources)


def _source(
    kind: str, spec: Mapping[str, Any], mode: int, pod: Mapping[str, Any], sources: Sources
) -> dict[str, File]:
    metadata = pod.get("metadata") or {}
    namespace = metadata.get("namespace", "")
    if kind in ("configMap", "secret"):
        plural, title = ("configmaps", "configmap") if kind == "configMap" else ("secrets", "secret")
        name = spec.get("name") or spec.get("secretName") or ""
        obj = sources.read(plural, namespace, name)
        if obj is None:
            if spec.get("optional"):
                return {}
            raise VolumeError(f'{title} "{name}" not found')
        data = _binary_data(obj, plural)
        items = spec.get("items")
        if not items:
            return {key: File(value, mode) for key, value in data.items()}
        files: dict[str, File] = {}
        for item in items:
            key = item.get("key", "")
            if key not in data:
                if spec.get("optional"):
                    continue
                what = "config key" if kind == "configMap" else "secret key"
                raise VolumeError(f"{title} references non-existent {what}: {key}")
            files[_relative(item.get("path") or key)] = File(data[key], int(item.get("mode", mode)))
        return files
    if kind == "downwardAPI":
        files = {}
        for item in spec.get("items") or []:
            value = _downward_value(item, pod, sources)
            files[_relative(item["path"])] = File(value.encode(), int(item.get("mode", mode)))
        return files
    if kind == "serviceAccountToken":
        if sources.issue_token is None:
            raise VolumeError("this node cannot issue service account tokens (no API server in this process)")
        account_name = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        account = sources.read("serviceaccounts", namespace, account_name)
        if account is None:
            raise VolumeError(f'failed to fetch token: serviceaccounts "{account_name}" not found')
        expiration = max(int(spec.get("expirationSeconds") or 3600), MINIMUM_EXPIRATION)
        audiences = [spec["audience"]] if spec.get("audience") else []
        uid = str((account.get("metadata") or {}).get("uid", ""))
        token = sources.issue_token(namespace, account_name, uid, expiration, audiences)
        return {_relative(spec.get("path") or "token"): File(token.value.encode(), mode)}
    if kind == CLUSTER_CA_SOURCE:
        return {_relative(spec["path"]): File(sources.cluster_ca, mode)}
    raise VolumeError(f"volume source {kind!r} is not supported by localkube's process node")


def _binary_data(obj: Mapping[str, Any], plural: str) -> dict[str, bytes]:
    if plural == "secrets":
        decoded = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        return {**decoded, **{k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()}}
    binary = {k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()}
    return {**binary, **{k: str(v).encode() for k, v in (obj.get("data") or {}).items()}}


def _downward_value(item: Mapping[str, Any], pod: Mapping[str, Any], sources: Sources) -> str:
    if "fieldRef" in item:
        path = item["fieldRef"].get("fieldPath", "")
        metadata = pod.get("metadata") or {}
        if path in ("metadata.labels", "metadata.annotations"):
            values = metadata.get(path.split(".")[1]) or {}
            return "\n".join(f"{k}={json.dumps(str(values[k]), ensure_ascii=False)}" for k in sorted(values))
        try:
            return field_value(pod, path)
        except ContainerConfigError as err:
            raise VolumeError(str(err).replace("env valueFrom", "downwardAPI")) from None
    if "resourceFieldRef" in item:
        ref = item["resourceFieldRef"]
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        container = next((c for c in containers if c.get("name") == ref.get("containerName")), containers[0])
        try:
            return resource_value(pod, container, ref, sources.allocatable)
        except ContainerConfigError as err:
            raise VolumeError(str(err).replace("env valueFrom", "downwardAPI")) from None
    raise VolumeError(f"downwardAPI item {item.get('path')!r} has neither fieldRef nor resourceFieldRef")


def _relative(path: str) -> str:
    """A file's path inside its volume; one that is absolute or leaves the volume is refused, as the API
    server refuses it."""
    normal = posixpath.normpath(path)
    if path.startswith("/") or normal == ".." or normal.startswith("../") or path.startswith(".."):
        raise VolumeError(f"invalid path {path!r}: must be relative and may not contain '..'")
    return normal
