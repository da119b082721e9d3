"""Validation of a Pod's spec as kube-apiserver's ValidatePodCreate does it, for what clients meet first:
containers required, each with a name (an RFC 1123 label, unique in the pod) and an image; container ports
within 1-65535; requests not above limits; `restartPolicy` one of Always, OnFailure, Never. Resource
quantities that do not parse are the decoder's refusal (400), as on the real server.
"""

from __future__ import annotations

from typing import Any

from kubesemantics import quantity
from kubesemantics.schema import supported_values
from localkube.admission.errors import DUPLICATE, INVALID, REQUIRED, UNSUPPORTED, FieldError
from localkube.server import errors
from localkube.server.validation import name_problems

_RESTART_POLICIES = ("Always", "OnFailure", "Never")
# The regular expression the decoder names when a quantity does not parse.
_QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def validate_pod(obj: dict[str, Any]) -> list[FieldError]:
    """The causes for refusing a Pod; raises 400 for a quantity that does not parse."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    containers = spec.get("containers") or []
    causes = [] if containers else [FieldError("spec.containers", REQUIRED)]
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or []):
            if isinstance(container, dict):
                causes += _container(container, f"spec.{field}[{index}]", seen)
    restart = spec.get("restartPolicy", "Always")
    if restart not in _RESTART_POLICIES:
        causes.append(
            FieldError("spec.restartPolicy", UNSUPPORTED, restart, supported_values(_RESTART_POLICIES))
        )
    return causes


def _container(container: dict[str, Any], path: str, seen: set[str]) -> list[FieldError]:
    causes: list[FieldError] = []
    name = container.get("name")
    if not name:
        causes.append(FieldError(f"{path}.name", REQUIRED))
    elif name in seen:
        causes.append(FieldError(f"{path}.name", DUPLICATE, name))
    else:
        # A container's name is an RFC 1123 label, as a Namespace's is.
        causes += [
            FieldError(f"{path}.name", INVALID, name, text) for text in name_problems("Namespace", name)
        ]
        seen.add(name)
    if not container.get("image"):
        causes.append(FieldError(f"{path}.image", REQUIRED))
    for index, port in enumerate(container.get("ports") or []):
        number = port.get("containerPort") if isinstance(port, dict) else None
        if isinstance(number, int) and not 1 <= number <= 65535:
            causes.append(
                FieldError(
                    f"{path}.ports[{index}].containerPort",
                    INVALID,
                    number,
                    "must be between 1 and 65535, inclusive",
                )
            )
    return causes + _resources(container.get("resources") or {}, f"{path}.resources")


def _resources(resources: dict[str, Any], path: str) -> list[FieldError]:
    parsed: dict[str, dict[str, Any]] = {}
    for field in ("limits", "requests"):
        parsed[field] = {}
        for resource, value in (resources.get(field) or {}).items():
            try:
                parsed[field][resource] = quantity.parse(value)
            except quantity.QuantityError:
                raise errors.bad_request(
                    f'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
                    f"expression '{_QUANTITY_PATTERN}'"
                ) from None
    causes = []
    for resource, request in parsed["requests"].items():
        limit = parsed["limits"].get(resource)
        if limit is not None and request > limit:
            detail = f"must be less than or equal to {resource} limit of {resources['limits'][resource]}"
            causes.append(
                FieldError(f"{path}.requests", INVALID, str(resources["requests"][resource]), detail)
            )
    return causes
