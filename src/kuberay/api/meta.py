"""Kubernetes types shared by every ray.io kind: `ObjectMeta`, `Condition`, `KubeObject` (the base of the
four top-level kinds), and the aliases of the embedded Kubernetes types (`PodTemplateSpec`, `Service`, ...).

`ObjectMeta` names the fields the operator reads or writes and keeps every other key (managedFields, ...)
unchanged. `Condition` is `metav1.Condition` with the schema facts controller-gen emits for it.
A `KubeObject` always writes its `apiVersion` and `kind`, also when built in Python without them, so an
object the operator creates (a RayJob's RayCluster, a RayCronJob's RayJob) is complete on the wire.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, PlainSerializer

from kuberay.api.base import Embedded, Int64, KubeModel, OpenAPI, Time


def _go_float(value: float) -> float | int:
    return int(value) if value.is_integer() else value


# A Go float32/float64: `type: number`, written as Go's encoding/json writes it (2.0 as `2`), so a parsed
# object dumps back to the same JSON.
GoFloat = Annotated[float, PlainSerializer(_go_float, when_used="json")]

# Embedded Kubernetes types: plain JSON dicts, named by their OpenAPI definitions.
PodTemplateSpec = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.PodTemplateSpec")]
Service = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.Service")]
Container = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.Container")]
ResourceRequirements = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.ResourceRequirements")]
SecurityContext = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.SecurityContext")]
EnvVar = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.EnvVar")]
EnvVarSource = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.EnvVarSource")]
EnvFromSource = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.EnvFromSource")]
VolumeMount = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.VolumeMount")]
IngressTLS = Annotated[dict[str, Any], Embedded("io.k8s.api.networking.v1.IngressTLS")]
NetworkPolicyIngressRule = Annotated[
    dict[str, Any], Embedded("io.k8s.api.networking.v1.NetworkPolicyIngressRule")
]
NetworkPolicyEgressRule = Annotated[
    dict[str, Any], Embedded("io.k8s.api.networking.v1.NetworkPolicyEgressRule")
]

CONDITION_REASON_PATTERN = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_TYPE_PATTERN = (
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)

ConditionStatus = Literal["True", "False", "Unknown"]


class ObjectMeta(KubeModel):
    """`metav1.ObjectMeta` of a top-level object (the CRD schema of top-level `metadata` is only
    ``{type: object}``; the API server owns its validation)."""

    name: str | None = None
    generate_name: str | None = Field(default=None, alias="generateName")
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    generation: Int64 | None = None
    creation_timestamp: Time | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: Time | None = Field(default=None, alias="deletionTimestamp")
    deletion_grace_period_seconds: Int64 | None = Field(default=None, alias="deletionGracePeriodSeconds")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[dict[str, Any]] | None = Field(default=None, alias="ownerReferences")


class Condition(KubeModel):
    """`metav1.Condition`: one entry of a `conditions` list keyed by `type`."""

    type: Annotated[str, OpenAPI({"maxLength": 316, "pattern": CONDITION_TYPE_PATTERN})]
    status: ConditionStatus
    observed_generation: Annotated[Int64 | None, OpenAPI({"minimum": 0})] = Field(
        default=None, alias="observedGeneration"
    )
    last_transition_time: Time = Field(alias="lastTransitionTime")
    reason: Annotated[str, OpenAPI({"minLength": 1, "maxLength": 1024, "pattern": CONDITION_REASON_PATTERN})]
    message: Annotated[str, OpenAPI({"maxLength": 32768})]


# The schema keywords of a `[]metav1.Condition` field.
CONDITIONS_LIST = OpenAPI({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})


class KubeObject(KubeModel):
    """A top-level ray.io object: `apiVersion`, `kind`, `metadata`; subclasses add `spec` and `status`
    and give `kind` its default and `PLURAL` its resource name."""

    PLURAL: ClassVar[str]

    api_version: str = Field(default="ray.io/v1", alias="apiVersion")
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def model_post_init(self, context: Any, /) -> None:
        # Written even when not given: an object built in Python must say what it is.
        self.model_fields_set.update(("api_version", "kind"))

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def labels(self) -> dict[str, str]:
        """The object's labels, for reading (empty when none)."""
        return self.metadata.labels or {}

    @property
    def annotations(self) -> dict[str, str]:
        """The object's annotations, for reading (empty when none)."""
        return self.metadata.annotations or {}
