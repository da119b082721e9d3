"""CustomResourceDefinitions as the apiextensions server treats them when they are written.

`validate` refuses what the real server refuses (a name that is not `<plural>.<group>`, missing names,
a bad scope, not exactly one storage version, a schema that is not structural); `set_status` records the
accepted names and the `NamesAccepted` and `Established` conditions at once, since localkube serves a
CRD's resources as soon as it is stored.
"""

from __future__ import annotations

import datetime
from typing import Any

from kubesemantics import times
from kubesemantics.schema import supported_values
from localkube.admission.errors import INVALID, REQUIRED, UNSUPPORTED, FieldError
from localkube.admission.schema import check_structural


def validate(crd: dict[str, Any]) -> list[FieldError]:
    found: list[FieldError] = []
    spec = _mapping(crd.get("spec"))
    names = _mapping(spec.get("names"))
    group, plural = spec.get("group"), names.get("plural")
    if not group:
        found.append(FieldError("spec.group", REQUIRED))
    for field in ("plural", "kind"):
        if not names.get(field):
            found.append(FieldError(f"spec.names.{field}", REQUIRED))
    name = crd.get("metadata", {}).get("name")
    if group and plural and name != f"{plural}.{group}":
        found.append(FieldError("metadata.name", INVALID, name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        scopes = ("Cluster", "Namespaced")
        found.append(FieldError("spec.scope", UNSUPPORTED, spec.get("scope"), supported_values(scopes)))
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if v.get("storage")) != 1:
        found.append(
            FieldError(
                "spec.versions", INVALID, versions, "must have exactly one version marked as storage version"
            )
        )
    for index, version in enumerate(versions):
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        path = f"spec.versions[{index}].schema.openAPIV3Schema"
        if schema is None:
            found.append(FieldError(path, REQUIRED, detail="schemas are required"))
        else:
            found += check_structural(schema, path)
    return found


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def set_status(crd: dict[str, Any]) -> None:
    spec = crd.get("spec") or {}
    status = crd.setdefault("status", {})
    now = times.format_time(datetime.datetime.now(datetime.UTC))
    previous = {c.get("type"): c for c in status.get("conditions") or []}
    status["acceptedNames"] = dict(spec.get("names") or {})
    status["conditions"] = [
        previous.get("NamesAccepted")
        or {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
        previous.get("Established")
        or {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
    ]  # fmt: skip
    stored = list(status.get("storedVersions") or [])
    for version in spec.get("versions") or []:
        if version.get("storage") and version.get("name") not in stored:
            stored.append(version["name"])
    status["storedVersions"] = stored
