"""The base of every ray.io model, and the markers that carry CRD schema facts.

Invariants every model in `kuberay.api` keeps:

- Python attributes are snake_case; the JSON name is the field's alias (upstream's exact spelling, e.g.
  `podIP`, `rayStartParams`). Models accept either name on input and always write the alias.
- Unknown fields are kept (`extra="allow"`) and written back unchanged, so an object written by a newer
  client (Ray's autoscaler, a newer KubeRay) survives a read-modify-write through us.
- `dump()` writes only what was set: parse then dump is the identity on JSON.
- Embedded Kubernetes types (PodTemplateSpec, ServiceSpec, ...) are plain JSON dicts annotated with
  `Embedded("io.k8s.api.core.v1.PodTemplateSpec")`; the CRD generator expands them from the official schemas.

The markers below are read by the CRD generator (`kuberay.api.crd`); they change nothing at run time:

- a field without a Python default is `required` in the CRD; `Required()` marks one that has a default;
- `Literal[...]` becomes `enum`; `OpenAPI({...})` adds keywords (a CRD `default` is written only from
  `OpenAPI({"default": ...})`, never inferred from the Python default); `Rule(...)` adds a CEL rule to the
  field; a model's `__crd_rules__: ClassVar[tuple[Rule, ...]]` adds object-level CEL rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict

from kubesemantics import quantity


@dataclass(frozen=True)
class Embedded:
    """The field holds an embedded Kubernetes type, named by its OpenAPI definition
    (e.g. ``io.k8s.api.core.v1.PodTemplateSpec``)."""

    definition: str


@dataclass(frozen=True)
class Rule:
    """One `x-kubernetes-validations` entry on the field's schema (or, on a model's
    `__crd_rules__`, on the object's schema)."""

    rule: str
    message: str | None = None


@dataclass(frozen=True)
class OpenAPI:
    """Extra OpenAPI keywords emitted verbatim into the field's schema
    (``format``, ``minimum``, ``maxLength``, ``pattern``, ``nullable``, ``x-kubernetes-*`` ...)."""

    keywords: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self.keywords.items())))


@dataclass(frozen=True)
class Required:
    """The CRD lists the field as required although the model gives it a default (the API server applies
    schema defaults before its required check, so such a field never fails that check)."""


Int32 = Annotated[int, OpenAPI({"format": "int32"})]
Int64 = Annotated[int, OpenAPI({"format": "int64"})]
# A resource.Quantity: an integer or a string such as "500m" or "1Gi" (the pattern is apimachinery's).
Quantity = Annotated[
    int | str, OpenAPI({"x-kubernetes-int-or-string": True, "pattern": quantity.OPENAPI_PATTERN})
]
# A metav1.Time, RFC 3339.
Time = Annotated[str, OpenAPI({"format": "date-time"})]


class KubeModel(BaseModel):
    """Base of every ray.io model: aliases on the wire, unknown fields kept, only set fields written."""

    model_config = ConfigDict(populate_by_name=True, extra="allow", validate_assignment=False)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Self:
        """Builds the model from a JSON-shaped dict (as read from the API server or a YAML file)."""
        return cls.model_validate(data)

    def dump(self) -> dict[str, Any]:
        """The JSON-shaped dict: aliases, only the fields that were set, unknown fields included."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
