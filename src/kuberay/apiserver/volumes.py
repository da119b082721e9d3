"""The API's `Volume`s to a pod template's volumes and the container's mounts, and back, as upstream's
APIServer maps them (pure). Enums are their names; a bad storage quantity is a `VolumeSpecError`."""

from __future__ import annotations

import re
from typing import Any

from kuberay.apiserver.errors import ApiServerError

Object = dict[str, Any]

_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
_PROPAGATION = {"HOSTTOCONTAINER": "HostToContainer", "BIDIRECTIONAL": "Bidirectional"}
_ACCESS = {"RWO": "ReadWriteOnce", "ROX": "ReadOnlyMany", "RWX": "ReadWriteMany"}
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"


class VolumeSpecError(ApiServerError, ValueError):
    """A volume upstream refuses to build (its messages)."""


def _items(volume: Object) -> list[Object]:
    return [{"key": k, "path": v} for k, v in sorted((volume.get("items") or {}).items())]


def _source(volume: Object) -> Object:
    kind, name = volume.get("volume_type", "PERSISTENT_VOLUME_CLAIM"), volume.get("source", "")
    storage = volume.get("storage", "")
    if kind == "CONFIGMAP":
        config_map: Object = {"name": name, **({"items": _items(volume)} if volume.get("items") else {})}
        return {"configMap": config_map}
    if kind == "SECRET":
        return {"secret": {"secretName": name, **({"items": _items(volume)} if volume.get("items") else {})}}
    if kind == "EMPTY_DIR":
        if storage and not _QUANTITY.match(storage):
            raise VolumeSpecError("storage for empty dir volume is not specified correctly")
        return {"emptyDir": {"sizeLimit": storage} if storage else {}}
    if kind == "HOST_PATH":
        path_type = "File" if volume.get("host_path_type") == "FILE" else "Directory"
        return {"hostPath": {"path": name, "type": path_type}}
    if kind == "EPHEMERAL":
        if not storage:
            raise VolumeSpecError("storage for ephemeral volume is empty")
        if not _QUANTITY.match(storage):
            raise VolumeSpecError("storage for ephemeral volume is not specified correctly")
        spec: Object = {"accessModes": [_ACCESS.get(volume.get("accessMode", "RWO"), "ReadWriteOnce")],
                        "resources": {"requests": {"storage": storage}}}  # fmt: skip
        if volume.get("storageClassName"):
            spec["storageClassName"] = volume["storageClassName"]
        template = {"metadata": {"labels": {MANAGED_BY_LABEL: "kuberay-apiserver"}}, "spec": spec}
        return {"ephemeral": {"volumeClaimTemplate": template}}
    return {
        "persistentVolumeClaim": {
            "claimName": name,
            **({"readOnly": True} if volume.get("read_only") else {}),
        }
    }


def to_pod(volumes: list[Object]) -> tuple[list[Object], list[Object]]:
    """(pod volumes, container volume mounts)."""
    pod_volumes, mounts = [], []
    for volume in volumes:
        pod_volumes.append({"name": volume.get("name", ""), **_source(volume)})
        mount: Object = {"name": volume.get("name", ""), "mountPath": volume.get("mount_path", "")}
        if volume.get("read_only"):
            mount["readOnly"] = True
        propagation = _PROPAGATION.get(volume.get("mount_propagation_mode", ""))
        if propagation:
            mount["mountPropagation"] = propagation
        mounts.append(mount)
    return pod_volumes, mounts


def from_pod(pod: Object) -> list[Object]:
    mounts = {m.get("name"): m for c in pod.get("containers") or [] for m in c.get("volumeMounts") or []}
    back_propagation = {v: k for k, v in _PROPAGATION.items()}
    back_access = {v: k for k, v in _ACCESS.items()}
    result = []
    for volume in pod.get("volumes") or []:
        mount = mounts.get(volume.get("name"), {})
        api: Object = {"name": volume.get("name", ""), "mount_path": mount.get("mountPath", "")}
        if mount.get("mountPropagation") in back_propagation:
            api["mount_propagation_mode"] = back_propagation[mount["mountPropagation"]]
        if mount.get("readOnly"):
            api["read_only"] = True
        if "configMap" in volume or "secret" in volume:
            kind = "CONFIGMAP" if "configMap" in volume else "SECRET"
            source = volume.get("configMap") or volume.get("secret") or {}
            api.update(volume_type=kind, source=source.get("name") or source.get("secretName", ""))
            if source.get("items"):
                api["items"] = {i["key"]: i["path"] for i in source["items"]}
        elif "emptyDir" in volume:
            api["volume_type"] = "EMPTY_DIR"
            if (volume["emptyDir"] or {}).get("sizeLimit"):
                api["storage"] = str(volume["emptyDir"]["sizeLimit"])
        elif "hostPath" in volume:
            api.update(volume_type="HOST_PATH", source=volume["hostPath"].get("path", ""),
                       host_path_type="FILE" if volume["hostPath"].get("type") == "File" else "DIRECTORY")  # fmt: skip
        elif "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]
            api.update(volume_type="PERSISTENT_VOLUME_CLAIM", source=claim.get("claimName", ""))
            if claim.get("readOnly"):
                api["read_only"] = True
        elif "ephemeral" in volume:
            spec = ((volume["ephemeral"] or {}).get("volumeClaimTemplate") or {}).get("spec") or {}
            api.update(volume_type="EPHEMERAL",
                       storage=str(((spec.get("resources") or {}).get("requests") or {}).get("storage", "")),
                       accessMode=back_access.get((spec.get("accessModes") or ["ReadWriteOnce"])[0], "RWO"))  # fmt: skip
            if spec.get("storageClassName"):
                api["storageClassName"] = spec["storageClassName"]
        else:
            continue
        result.append(api)
    return result
