"""Validation of ray.io objects: every rule of upstream KubeRay's `validation.go` and its admission
webhooks, one function per kind, called by both admission and the reconcilers.

Each function returns every failing rule as a `FieldError` (JSON path of the field, upstream's exact
message), in upstream's order. Upstream stops at its first failure; callers that mimic upstream (the
reconcilers' Events and status messages) take `errors[0]`. Order per kind:

- RayCluster: metadata (webhook and reconciler), unique worker-group names (webhook), spec, upgrade
  options, status.
- RayJob: metadata (webhook and reconciler), spec, status. RayService: metadata (webhook and
  reconciler), spec. RayCronJob: name, schedule, time zone, then the RayJob rules on `jobTemplate`.

The `*_admission` functions are what upstream's admission webhooks check, built from the same rules as the
reconcilers' functions, so that admission never refuses what a reconciler would accept, nor says it
differently.

For the reconcilers: `event_reason(kind, error)` is the reason of upstream's Warning Event for an error,
and `autoscaler_v1_restart_policy_warning` is upstream's one warning that is not an error.

Rules read an object's JSON form (see `wire`), so "unset" means what it means upstream. Feature gates
come in explicitly. Objects whose `managedBy` names another controller are still validated here; skipping
them is the reconcilers' decision, as upstream's reconcilers skip before validating.
"""

from __future__ import annotations

from collections.abc import Sequence

from kuberay.api.features import FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from kuberay.api.validation import alphafields, raycluster, raycronjob, rayjob, rayservice, wire
from kuberay.api.validation.field import Errors, FieldError

__all__ = [
    "FieldError",
    "validate_raycluster",
    "validate_raycluster_admission",
    "validate_raycronjob",
    "validate_rayjob",
    "validate_rayjob_admission",
    "validate_rayservice",
    "validate_rayservice_admission",
]


def validate_raycluster(cluster: RayCluster, gates: FeatureGates) -> list[FieldError]:
    """Upstream's RayCluster webhook checks and the RayCluster reconciler's `ValidateRayCluster*` rules
    (the reconciler defaults a nil `rayStartParams` to ``{}`` first, which reading absent as empty does)."""
    data = cluster.dump()
    meta, spec = wire.obj(data, "metadata"), wire.obj(data, "spec")
    return [
        *raycluster.metadata(meta),
        *raycluster.unique_group_names(spec),
        *raycluster.cluster_spec(spec, wire.strings(meta, "annotations"), gates, "spec"),
        *raycluster.upgrade_options(spec, wire.strings(meta, "labels")),
        *raycluster.status(wire.obj(data, "status")),
    ]


def validate_raycluster_admission(
    data: wire.JSON, allowed_node_labels: Sequence[str] = ()
) -> list[FieldError]:
    """What upstream's RayCluster admission webhook checks, on an object's JSON form: the metadata rules,
    unique worker-group names and (v1.8) the labelMappings rules against the operator's
    `allowedNodeLabels` (the spec rules are the reconciler's, as upstream)."""
    meta, spec = wire.obj(data, "metadata"), wire.obj(data, "spec")
    return [
        *raycluster.metadata(meta),
        *raycluster.unique_group_names(spec),
        *alphafields.label_delivery(spec, "spec", wire.strings(meta, "annotations"), allowed_node_labels),
    ]


def validate_rayjob(job: RayJob, gates: FeatureGates) -> list[FieldError]:
    """Upstream's `ValidateRayJobMetadata`, `ValidateRayJobSpec` and `ValidateRayJobStatus`.

    Difference from upstream, on purpose: upstream's RayJob reconciler has no way out of
    `ValidationFailed`, so a job stays failed after its spec is fixed. These rules are a pure function of
    the object, re-run on every reconcile; a job in `ValidationFailed` whose rules now pass is valid, and
    the RayJob reconciler moves it back to New so that it runs, which is what a user who fixed the spec
    expects.
    """
    data = job.dump()
    meta, spec = wire.obj(data, "metadata"), wire.obj(data, "spec")
    return [
        *rayjob.metadata(meta),
        *rayjob.job_spec(spec, wire.strings(meta, "annotations"), gates, "spec"),
        *rayjob.status(spec, wire.obj(data, "status")),
    ]


def validate_rayjob_admission(data: wire.JSON, allowed_node_labels: Sequence[str] = ()) -> list[FieldError]:
    """What upstream's RayJob admission webhook (v1.7) checks, on an object's JSON form: the metadata rules,
    and (v1.8) the labelMappings rules of its cluster spec (the spec and status rules are the reconciler's,
    as upstream)."""
    return [
        *_as_metadata_name(rayjob.metadata(wire.obj(data, "metadata"))),
        *_label_delivery(data, "rayClusterSpec", allowed_node_labels),
    ]


def validate_rayservice_admission(
    data: wire.JSON, allowed_node_labels: Sequence[str] = ()
) -> list[FieldError]:
    """What upstream's RayService admission webhook (v1.7) checks, on an object's JSON form: the metadata
    rules, the `ray.io/initializing-timeout` annotation included, and (v1.8) the labelMappings rules of its
    cluster spec (the spec rules are the reconciler's, as upstream)."""
    return [
        *_as_metadata_name(rayservice.metadata(wire.obj(data, "metadata"))),
        *_label_delivery(data, "rayClusterConfig", allowed_node_labels),
    ]


def _label_delivery(data: wire.JSON, cluster_spec: str, allowed: Sequence[str]) -> Errors:
    annotations = wire.strings(wire.obj(data, "metadata"), "annotations")
    spec = wire.obj(wire.obj(data, "spec"), cluster_spec)
    return alphafields.label_delivery(spec, f"spec.{cluster_spec}", annotations, allowed)


def _as_metadata_name(errors: Errors) -> list[FieldError]:
    """Upstream's RayJob and RayService webhooks report the one error their `Validate<Kind>Metadata` returns
    (its first failing rule) as `field.Invalid(metadata.name, <name>, err)`: at `metadata.name` even when
    the rule is RayService's annotation, which is what a client reads."""
    first = next(errors, None)
    return [] if first is None else [FieldError("metadata.name", first.message)]


def validate_rayservice(service: RayService, gates: FeatureGates) -> list[FieldError]:
    """Upstream's `ValidateRayServiceMetadata` and `ValidateRayServiceSpec`."""
    data = service.dump()
    meta = wire.obj(data, "metadata")
    return [
        *rayservice.metadata(meta),
        *rayservice.service_spec(wire.obj(data, "spec"), wire.strings(meta, "annotations"), gates),
    ]


def validate_raycronjob(cronjob: RayCronJob, gates: FeatureGates) -> list[FieldError]:
    """Upstream's `ValidateRayCronJobSpec` (the only RayCronJob validation upstream has)."""
    data = cronjob.dump()
    return list(raycronjob.cronjob(wire.obj(data, "metadata"), wire.obj(data, "spec"), gates))


def event_reason(kind: str, error: FieldError) -> str:
    """The reason of the Warning Event upstream's reconciler emits for `error` of an object of `kind`:
    ``Invalid<Kind>Metadata`` for the name (and RayService's metadata annotation), ``Invalid<Kind>Status``
    for status rules, ``Invalid<Kind>Spec`` for everything else (RayCronJob has only the latter)."""
    if kind != "RayCronJob" and (
        error.path == "metadata.name" or error.message.startswith(rayservice.METADATA_INVALID)
    ):
        return f"Invalid{kind}Metadata"
    if error.path.startswith("status."):
        return f"Invalid{kind}Status"
    return f"Invalid{kind}Spec"


def autoscaler_v1_restart_policy_warning(cluster: RayCluster) -> str | None:
    """Upstream's warning (not an error) for worker groups whose `restartPolicy` is neither unset nor
    ``Never`` while autoscaler v1 is chosen explicitly; None when there is nothing to warn about."""
    spec = wire.obj(cluster.dump(), "spec")
    if (
        not wire.flag(spec, "enableInTreeAutoscaling")
        or wire.text(wire.obj(spec, "autoscalerOptions"), "version") != "v1"
    ):
        return None
    groups = [
        wire.text(group, "groupName")
        for group in wire.objs(spec, "workerGroupSpecs")
        if wire.text(wire.obj(wire.obj(group, "template"), "spec"), "restartPolicy") not in ("", "Never")
    ]
    if not groups:
        return None
    return f"restartPolicy for worker groups [{', '.join(groups)}] should be Never or unset when using autoscaler V1"
