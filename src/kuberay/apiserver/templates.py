"""Compute templates: the API's `ComputeTemplate` and the ConfigMap that stores it (pure, no I/O).

Messages are handled as dicts with the proto's own field names (`gpu_accelerator`), as `json_format`
gives them with `preserving_proto_field_name`; zero values are absent.
"""

from __future__ import annotations

import json
from typing import Any

from kuberay.apiserver import errors

Object = dict[str, Any]

CONFIG_TYPE_LABEL = "ray.io/config-type"
CONFIG_TYPE = "compute-template"
TEMPLATE_LABEL = "ray.io/compute-template"
SELECTOR = f"{CONFIG_TYPE_LABEL}={CONFIG_TYPE}"
DEFAULT_MEMORY_UNIT = "Gi"
# Binary and decimal suffixes of a Kubernetes quantity, and none.
MEMORY_UNITS = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E")


def validate_create(request: Object) -> None:
    template = request.get("compute_template") or {}
    namespace = request.get("namespace", "")
    if not namespace:
        raise errors.invalid_input("Namespace is empty. Please specify a valid value.")
    if namespace != template.get("namespace", ""):
        raise errors.invalid_input(
            "The namespace in the request is different from the namespace defined in the compute template."
        )
    if not template.get("name"):
        raise errors.invalid_input("Compute template name is empty. Please specify a valid value.")
    if not template.get("cpu"):
        raise errors.invalid_input("Cpu amount is zero. Please specify a valid value.")
    if not template.get("memory"):
        raise errors.invalid_input("Memory amount is zero. Please specify a valid value.")
    unit = template.get("memory_unit", "")
    if unit not in MEMORY_UNITS:
        raise errors.invalid_input(
            f"computeTemplate.memoryUnit: {unit!r} is not a quantity suffix (one of {', '.join(MEMORY_UNITS[1:])})."
        )


def to_config_map(template: Object) -> Object:
    name = template["name"]
    data = {
        "name": name,
        "namespace": template["namespace"],
        "cpu": str(template.get("cpu", 0)),
        "memory": str(template.get("memory", 0)),
        "memory_unit": template.get("memory_unit") or DEFAULT_MEMORY_UNIT,
        "gpu": str(template.get("gpu", 0)),
        "gpu_accelerator": template.get("gpu_accelerator", ""),
        # Upstream marshals a Go map: `null` when none is set.
        "extended_resources": json.dumps(template.get("extended_resources") or None, separators=(",", ":")),
    }
    if template.get("tolerations"):
        data["tolerations"] = json.dumps(template["tolerations"], separators=(",", ":"))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": template["namespace"],
            "labels": {CONFIG_TYPE_LABEL: CONFIG_TYPE, TEMPLATE_LABEL: name},
        },
        "data": data,
    }


def _uint(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def from_config_map(config_map: Object) -> Object:
    meta = config_map.get("metadata") or {}
    data = config_map.get("data") or {}
    template: Object = {
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "cpu": _uint(data.get("cpu")),
        "memory": _uint(data.get("memory")),
        "memory_unit": data.get("memory_unit", ""),
        "gpu": _uint(data.get("gpu")),
        "gpu_accelerator": data.get("gpu_accelerator", ""),
    }
    for key in ("extended_resources", "tolerations"):
        try:
            value = json.loads(data[key]) if key in data else None
        except ValueError:
            value = None
        if value:
            template[key] = value
    return template
