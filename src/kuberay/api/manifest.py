"""ray.io objects in manifest text, and the offline check `kuberay validate` runs on each of them.

`ray_objects(text)` reads a multi-document YAML stream (documents and the items of `kind: List`) and keeps
the ray.io ones, in order; everything else (ConfigMaps, Services, ...) is skipped silently. It does no
I/O: the caller reads the file.

`check_object(data, gates)` does what a cluster would do with the object, without a cluster:
0. a value nested deeper than the API server decodes (kubesemantics.jsonvalue.MAX_DEPTH), then the API
   server's ObjectMeta rules: a name or a generateName, a name that is an RFC 1123 subdomain, valid
   label keys and values and annotation keys, annotations of at most 256 KiB;
1. the CRD schema check at the object's version (`schemacheck`); when it fails, the API server would
   refuse the object, so those errors are the answer;
2. the object as stored: schema defaults applied, a `generateName` completed with a 5-character suffix
   (the API server picks a random one; we use a fixed one of the same alphabet);
3. our validation (`kuberay.api.validation`) on the parsed v1 object, as the webhooks and reconcilers
   run it (a v1alpha1 object is stored and read as v1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic
import yaml

from kuberay.api import constants as c
from kuberay.api import schemacheck, validation
from kuberay.api.errors import InputError
from kuberay.api.features import FeatureGates
from kuberay.api.meta import KubeObject
from kuberay.api.raycluster import RayCluster
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from kuberay.api.validation import FieldError, names
from kubesemantics import jsonvalue
from kubesemantics.names import MAX_GENERATE_NAME_PREFIX, SUFFIX_ALPHABET, SUFFIX_LENGTH


class ManifestError(InputError):
    """The text is not a YAML stream of objects; the message says where."""


@dataclass(frozen=True)
class _Kind:
    model: type[KubeObject]
    validate: Callable[[Any, FeatureGates], list[FieldError]]
    versions: tuple[str, ...]


_KINDS: Mapping[str, _Kind] = {
    "RayCluster": _Kind(RayCluster, validation.validate_raycluster, ("v1", "v1alpha1")),
    "RayJob": _Kind(RayJob, validation.validate_rayjob, ("v1", "v1alpha1")),
    "RayService": _Kind(RayService, validation.validate_rayservice, ("v1", "v1alpha1")),
    "RayCronJob": _Kind(RayCronJob, validation.validate_raycronjob, ("v1",)),
}
_GENERATED_SUFFIX = SUFFIX_ALPHABET[:SUFFIX_LENGTH]


def _is_ray_object(document: Any) -> bool:
    return isinstance(document, dict) and str(document.get("apiVersion", "")).split("/")[0] == c.GROUP


def ray_objects(text: str) -> list[dict[str, Any]]:
    """The ray.io objects of a YAML stream, in order; `ManifestError` when the YAML does not parse or a
    document is not an object."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        raise ManifestError(f"invalid YAML: {' '.join(str(error).split())}") from None
    except RecursionError:  # PyYAML's parser recurses per level of nesting
        raise ManifestError(f"invalid YAML: nested deeper than {jsonvalue.MAX_DEPTH} levels") from None
    found: list[dict[str, Any]] = []
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ManifestError(f"document {number} is not an object")
        items = document.get("items") if document.get("kind") == "List" else [document]
        found.extend(item for item in items or [] if _is_ray_object(item))
    return found


def display_name(data: Mapping[str, Any]) -> str:
    """``<Kind>/<name>`` (the generateName prefix when the name is left to the API server)."""
    meta = data.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return f"{data.get('kind', '<no kind>')}/{meta.get('name') or meta.get('generateName') or '<no name>'}"


def _as_stored(data: dict[str, Any]) -> dict[str, Any]:
    meta = data.get("metadata")
    if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
        prefix = str(meta["generateName"])[:MAX_GENERATE_NAME_PREFIX]
        data = {**data, "metadata": {**meta, "name": prefix + _GENERATED_SUFFIX}}
    return data


def _model_errors(error: pydantic.ValidationError) -> list[FieldError]:
    def path(location: tuple[int | str, ...]) -> str:
        text = ""
        for part in location:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text or "<nil>"

    return [FieldError(path(problem["loc"]), problem["msg"]) for problem in error.errors()]


_MAX_ANNOTATIONS_BYTES = 256 * 1024


def _metadata_errors(meta: Any) -> list[FieldError]:
    """The API server's own ObjectMeta rules, which it checks before anything else: a name (or a
    generateName) that is an RFC 1123 subdomain, labels and annotation keys that are qualified names,
    label values, and annotations of at most 256 KiB in all."""
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        return [FieldError("metadata.name", "Required value: name or generateName is required")]
    found: list[FieldError] = []
    name = meta.get("name")
    if name and not isinstance(name, str):
        found.append(FieldError("metadata.name", "Invalid value: must be a string"))
    elif name and (problems := names.dns1123_subdomain(name)):
        found.append(FieldError("metadata.name", f'Invalid value: "{name}": {", ".join(problems)}'))
    for field in ("labels", "annotations"):
        entries = meta.get(field) or {}
        if not isinstance(entries, dict):
            found.append(FieldError(f"metadata.{field}", "Invalid value: must be a map of strings"))
            continue
        for key, value in entries.items():
            found += [
                FieldError(f"metadata.{field}", f'Invalid value: "{key}": {m}')
                for m in names.label_key(str(key))
            ]
            if not isinstance(value, str):
                found.append(FieldError(f"metadata.{field}.{key}", "Invalid value: must be a string"))
            elif field == "labels":
                found += [
                    FieldError("metadata.labels", f'Invalid value: "{value}": {m}')
                    for m in names.label_value(value)
                ]
        if (
            field == "annotations"
            and sum(len(f"{k}{v}".encode()) for k, v in entries.items()) > _MAX_ANNOTATIONS_BYTES
        ):
            found.append(
                FieldError(
                    "metadata.annotations", f"Too long: must have at most {_MAX_ANNOTATIONS_BYTES} bytes"
                )
            )
    return found


def check_object(data: dict[str, Any], gates: FeatureGates) -> list[FieldError]:
    """Schema check, then our validation, of one ray.io object (see the module docstring)."""
    group_version, kind = str(data.get("apiVersion", "")), str(data.get("kind", ""))
    version = group_version.partition("/")[2]
    known = _KINDS.get(kind)
    if known is None:
        return [FieldError("kind", f'no matches for kind "{kind}" in version "{group_version}"')]
    if version not in known.versions:
        return [FieldError("apiVersion", f'no matches for kind "{kind}" in version "{group_version}"')]
    if (deep := jsonvalue.too_deep(data)) is not None:
        # The API server refuses such a body before anything else (see kubesemantics.jsonvalue).
        return [FieldError(deep, f"nested deeper than {jsonvalue.MAX_DEPTH} levels")]
    meta_errors = _metadata_errors(data.get("metadata"))
    if meta_errors:
        return meta_errors
    schema_errors = schemacheck.check(data, kind, version)
    if schema_errors:
        return schema_errors
    stored = _as_stored(schemacheck.defaulted(data, kind, version))
    try:
        obj = known.model.parse({**stored, "apiVersion": c.API_VERSION})
    except pydantic.ValidationError as error:
        return _model_errors(error)
    return known.validate(obj, gates)
