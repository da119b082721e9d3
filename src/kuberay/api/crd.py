"""The CustomResourceDefinition manifests of the four ray.io kinds, generated from the pydantic models.

The models are the single source of truth; `deploy/crds/` holds what `render_yaml()` writes, and a test keeps
it current. The output follows upstream's controller-gen conventions so that both accept the same objects:

- each field's schema comes from its type: `str`/`bool`/`int`/`float` → string/boolean/integer/number,
  `Literal[...]` → `enum` (declared order), `list[T]` → array, `dict[str, T]` → object with
  `additionalProperties`, `A | B` of scalars → `anyOf`, a `KubeModel` → object with `properties`, its
  `required` (sorted) and its `__crd_rules__`; an `Embedded` Kubernetes type is expanded by `k8sschema`;
- the markers of `kuberay.api.base` add keywords (`OpenAPI`), CEL rules (`Rule`) and `required` entries
  (`Required`); nothing else (no Python default) reaches the schema;
- the top level is `apiVersion`, `kind`, `metadata: {type: object}`, `spec`, `status`, none required.

Rendering is deterministic: keys sorted at every level, strings quoted the way go-yaml quotes them (double
quotes only where a plain scalar would read as another type), so regenerating unchanged models rewrites
identical bytes.
"""

from __future__ import annotations

import copy
import functools
import types
import typing
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import BaseModel

from kuberay.api import k8sschema, v1alpha1
from kuberay.api.base import Embedded, OpenAPI, Required, Rule
from kuberay.api.errors import RayApiError
from kuberay.api.meta import KubeObject
from kuberay.api.raycluster import RayCluster
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService

GROUP = "ray.io"


@dataclass(frozen=True)
class PrinterColumn:
    """One `additionalPrinterColumns` entry (priority 0 is left out of the manifest, as upstream does)."""

    name: str
    type: str
    json_path: str
    priority: int = 0

    def manifest(self) -> dict[str, Any]:
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.priority:
            column["priority"] = self.priority
        return column


@dataclass(frozen=True)
class Version:
    """One served version of a kind: its top-level model and how the API server serves it."""

    name: str
    model: type[KubeObject]
    storage: bool
    printer_columns: tuple[PrinterColumn, ...] = ()
    deprecation_warning: str | None = None


@dataclass(frozen=True)
class Kind:
    """A ray.io kind; its names come from the storage version's model (`kind` default, `PLURAL`)."""

    versions: tuple[Version, ...]

    @property
    def _storage_model(self) -> type[KubeObject]:
        return next(version.model for version in self.versions if version.storage)

    @property
    def kind(self) -> str:
        kind: str = self._storage_model.model_fields["kind"].default
        return kind

    @property
    def plural(self) -> str:
        return self._storage_model.PLURAL

    @property
    def singular(self) -> str:
        return self.kind.lower()


def _v1alpha1_warning(kind: str) -> str:
    return (
        f"ray.io/v1alpha1 {kind} is deprecated; use ray.io/v1 {kind}. "
        "v1alpha1 receives no new fields and will be unavailable in KubeRay 1.9."
    )


_AGE = PrinterColumn("age", "date", ".metadata.creationTimestamp")
_RAYCLUSTER_COLUMNS = (
    PrinterColumn("desired workers", "integer", ".status.desiredWorkerReplicas"),
    PrinterColumn("available workers", "integer", ".status.availableWorkerReplicas"),
    PrinterColumn("cpus", "string", ".status.desiredCPU"),
    PrinterColumn("memory", "string", ".status.desiredMemory"),
    PrinterColumn("gpus", "string", ".status.desiredGPU"),
    PrinterColumn("tpus", "string", ".status.desiredTPU", priority=1),
    PrinterColumn("status", "string", ".status.state"),
    _AGE,
    PrinterColumn("head pod IP", "string", ".status.head.podIP", priority=1),
    PrinterColumn("head service IP", "string", ".status.head.serviceIP", priority=1),
)

# Order is the manifest order: rayclusters, rayjobs, rayservices, raycronjobs; in each, v1 first.
KINDS: tuple[Kind, ...] = (
    Kind(
        (
            Version("v1", RayCluster, storage=True, printer_columns=_RAYCLUSTER_COLUMNS),
            Version(
                "v1alpha1",
                v1alpha1.RayCluster,
                storage=False,
                printer_columns=_RAYCLUSTER_COLUMNS,
                deprecation_warning=_v1alpha1_warning("RayCluster"),
            ),
        ),
    ),
    Kind(
        (
            Version(
                "v1",
                RayJob,
                storage=True,
                printer_columns=(
                    PrinterColumn("job status", "string", ".status.jobStatus"),
                    PrinterColumn("deployment status", "string", ".status.jobDeploymentStatus"),
                    PrinterColumn("ray cluster name", "string", ".status.rayClusterName"),
                    # Upstream declares the times as strings, not dates.
                    PrinterColumn("start time", "string", ".status.startTime"),
                    PrinterColumn("end time", "string", ".status.endTime"),
                    _AGE,
                ),
            ),
            Version(
                "v1alpha1", v1alpha1.RayJob, storage=False, deprecation_warning=_v1alpha1_warning("RayJob")
            ),
        ),
    ),
    Kind(
        (
            Version(
                "v1",
                RayService,
                storage=True,
                printer_columns=(
                    PrinterColumn("service status", "string", ".status.serviceStatus"),
                    # A string column although the field is an integer, as upstream declares it.
                    PrinterColumn("num serve endpoints", "string", ".status.numServeEndpoints"),
                ),
            ),
            Version(
                "v1alpha1",
                v1alpha1.RayService,
                storage=False,
                deprecation_warning=_v1alpha1_warning("RayService"),
            ),
        ),
    ),
    Kind(
        (
            Version(
                "v1",
                RayCronJob,
                storage=True,
                printer_columns=(
                    PrinterColumn("schedule", "string", ".spec.schedule"),
                    PrinterColumn("timezone", "string", ".spec.timeZone"),
                    PrinterColumn("last schedule", "date", ".status.lastScheduleTime"),
                    _AGE,
                    PrinterColumn("suspend", "boolean", ".spec.suspend"),
                ),
            ),
        ),
    ),
)


class UnsupportedType(RayApiError, TypeError):
    """A model field has a Python type the generator cannot express as a CRD schema."""


# --- schemas from models ----------------------------------------------------------------------------------
def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural schema of a model: its fields by JSON name, `required`, and object-level CEL rules."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, field in model.model_fields.items():
        json_name = field.alias or name
        try:
            properties[json_name] = _annotated_schema(field.annotation, field.metadata)
        except UnsupportedType as error:
            raise UnsupportedType(f"{model.__name__}.{name}: {error}") from None
        if field.is_required() or any(isinstance(marker, Required) for marker in field.metadata):
            required.append(json_name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = sorted(required)
    rules: tuple[Rule, ...] = getattr(model, "__crd_rules__", ())
    if rules:
        schema["x-kubernetes-validations"] = [_rule(rule) for rule in rules]
    return schema


def _rule(rule: Rule) -> dict[str, str]:
    entry = {"rule": rule.rule}
    if rule.message is not None:
        entry["message"] = rule.message
    return entry


def _annotated_schema(annotation: Any, markers: typing.Sequence[Any]) -> dict[str, Any]:
    """The schema of `annotation` with the markers of an `Annotated` (or a pydantic field) applied."""
    embedded = [marker for marker in markers if isinstance(marker, Embedded)]
    schema = k8sschema.expand(embedded[-1].definition) if embedded else _type_schema(annotation)
    for marker in markers:
        if isinstance(marker, OpenAPI):
            schema.update(copy.deepcopy(marker.keywords))
        elif isinstance(marker, Rule):
            schema.setdefault("x-kubernetes-validations", []).append(_rule(marker))
    return schema


_SCALARS: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _type_schema(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _annotated_schema(args[0], annotation.__metadata__)
    if origin in (types.UnionType, typing.Union):
        members = [member for member in args if member is not type(None)]
        if len(members) == 1:
            return _type_schema(members[0])
        return {"anyOf": [_type_schema(member) for member in members]}
    if origin is Literal:
        kinds = {_SCALARS[type(value)] for value in args}
        if len(kinds) != 1:
            raise UnsupportedType(f"Literal mixing types: {annotation!r}")
        return {"type": kinds.pop(), "enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0])}
    if origin is dict:
        if args[0] is not str:
            raise UnsupportedType(f"map keys must be str: {annotation!r}")
        return {"type": "object", "additionalProperties": _type_schema(args[1])}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return model_schema(annotation)
        # An Enum is stored as its value; CRD enums come only from Literal, so none is emitted here.
        if issubclass(annotation, Enum):
            return {"type": _SCALARS[type(next(iter(annotation)).value)]}
        if annotation in _SCALARS:
            return {"type": _SCALARS[annotation]}
    raise UnsupportedType(f"no CRD schema for {annotation!r}")


def _version_schema(model: type[KubeObject]) -> dict[str, Any]:
    fields = model.model_fields
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            # The API server validates top-level metadata itself.
            "metadata": {"type": "object"},
            "spec": _annotated_schema(fields["spec"].annotation, fields["spec"].metadata),
            "status": _annotated_schema(fields["status"].annotation, fields["status"].metadata),
        },
    }


# --- manifests --------------------------------------------------------------------------------------------
def _manifest(kind: Kind) -> dict[str, Any]:
    versions = []
    for version in kind.versions:
        entry: dict[str, Any] = {
            "name": version.name,
            "served": True,
            "storage": version.storage,
            "schema": {"openAPIV3Schema": _version_schema(version.model)},
            "subresources": {"status": {}},
        }
        if version.printer_columns:
            entry["additionalPrinterColumns"] = [column.manifest() for column in version.printer_columns]
        if version.deprecation_warning is not None:
            entry["deprecated"] = True
            entry["deprecationWarning"] = version.deprecation_warning
        versions.append(entry)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "categories": ["all"],
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
            },
            "scope": "Namespaced",
            "versions": versions,
        },
    }


@functools.cache
def _manifests() -> tuple[dict[str, Any], ...]:
    return tuple(_manifest(kind) for kind in KINDS)


def crds() -> list[dict[str, Any]]:
    """The four CustomResourceDefinitions (apiextensions.k8s.io/v1): rayclusters, rayjobs, rayservices,
    raycronjobs. Each call returns fresh copies."""
    return copy.deepcopy(list(_manifests()))


def schema(kind: str, version: str = "v1") -> dict[str, Any]:
    """The `openAPIV3Schema` of a kind (``RayCluster``, ``RayJob``, ``RayService``, ``RayCronJob``) at a
    served version; `KeyError` naming what exists when there is no such kind or version."""
    for index, candidate in enumerate(KINDS):
        if candidate.kind != kind:
            continue
        for served in _manifests()[index]["spec"]["versions"]:
            if served["name"] == version:
                return copy.deepcopy(served["schema"]["openAPIV3Schema"])
        names = ", ".join(v.name for v in candidate.versions)
        raise KeyError(f"{kind} has no version {version!r} (served: {names})")
    raise KeyError(f"no ray.io kind {kind!r} (kinds: {', '.join(k.kind for k in KINDS)})")


def file_name(manifest: dict[str, Any]) -> str:
    """``<group>_<plural>.yaml``, the name upstream gives a CRD's file."""
    return f"{manifest['spec']['group']}_{manifest['spec']['names']['plural']}.yaml"


# libyaml's emitter when present (several times faster); both write the same bytes. An if-block rather than
# a conditional expression, so that mypy reads `_Dumper` as a class.
if TYPE_CHECKING or not yaml.__with_libyaml__:  # noqa: SIM108
    _Dumper = yaml.SafeDumper
else:
    _Dumper = yaml.CSafeDumper


class _GoStyleDumper(_Dumper):
    """Writes as go-yaml does: no anchors; double quotes where a plain scalar would read as another type
    (``"True"``, ``""``), otherwise plain, or single quotes where plain style is impossible."""

    def ignore_aliases(self, data: Any) -> bool:
        # Shared sub-schemas are written out in full, never as YAML anchors.
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    implicit_tag = dumper.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    reads_as_other = not value or implicit_tag != _STR_TAG
    return dumper.represent_scalar(_STR_TAG, value, style='"' if reads_as_other else None)


_STR_TAG = "tag:yaml.org,2002:str"
_GoStyleDumper.add_representer(str, _represent_str)


def render_manifest(manifest: dict[str, Any]) -> str:
    """One manifest as a YAML document starting with ``---``."""
    return "---\n" + yaml.dump(manifest, Dumper=_GoStyleDumper, sort_keys=True, allow_unicode=True)


def render_yaml() -> str:
    """All four CRDs as one multi-document YAML stream."""
    return "".join(text for _, text in _rendered())


def render_files() -> dict[str, str]:
    """Each CRD's file name under `deploy/crds/` (as upstream names it) and its content."""
    return dict(_rendered())


@functools.cache
def _rendered() -> tuple[tuple[str, str], ...]:
    # Rendering the four schemas as YAML takes seconds (PyYAML represents in Python even with libyaml).
    return tuple((file_name(manifest), render_manifest(manifest)) for manifest in _manifests())
