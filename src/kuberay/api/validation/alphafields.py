"""Upstream v1.8's gated fields of a RayClusterSpec: `workerGroupSpecs[].labelMappings` (Node Label Delivery,
gate `TopologyLabelDelivery`) and `gcsFaultToleranceOptions.activePassiveOptions` (gate
`GCSFaultToleranceActivePassiveHead`).

What upstream's reconciler refuses: a field whose gate is off (kuberay#5289's `validateGcsActivePassiveHead`,
#5300's topology-group check), and active-passive heads on any backend but redis (#5289). The lease timings
are the CRD's CEL rules, not checked here. Active-passive heads are not implemented here: with its gate on,
the field is accepted and kept, and does nothing yet.

What upstream's validating webhooks refuse of labelMappings (#5300, `label_delivery`): a node label the
operator's `allowedNodeLabels` does not list, two mappings giving the same Ray key, and a group whose Ray
container KubeRay does not start (`ray.io/overwrite-container-cmd` on the object or the group's template, or
a command of the user's that runs `ray start`), where the labels file could not be read. The messages are
ours: the PR text names the rules, not their words.
"""

from __future__ import annotations

from collections.abc import Sequence

from kuberay.api import constants as c
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.validation import wire
from kuberay.api.validation.field import Errors, FieldError
from kuberay.api.validation.wire import JSON


def label_mappings(spec: JSON, at: str, gates: FeatureGates) -> Errors:
    if gates.enabled(Feature.TOPOLOGY_LABEL_DELIVERY):
        return
    for i, group in enumerate(wire.objs(spec, "workerGroupSpecs")):
        if wire.has(group, "labelMappings"):
            yield FieldError(
                f"{at}.workerGroupSpecs[{i}].labelMappings",
                f"worker group {wire.text(group, 'groupName')}: labelMappings requires the "
                f"{Feature.TOPOLOGY_LABEL_DELIVERY} feature gate to be enabled",
            )


def active_passive(spec: JSON, at: str, gates: FeatureGates) -> Errors:
    options = wire.obj(spec, "gcsFaultToleranceOptions")
    if not wire.has(options, "activePassiveOptions"):
        return
    options_at = f"{at}.gcsFaultToleranceOptions.activePassiveOptions"
    if not gates.enabled(Feature.GCS_FAULT_TOLERANCE_ACTIVE_PASSIVE_HEAD):
        yield FieldError(
            options_at,
            f"activePassiveOptions requires the {Feature.GCS_FAULT_TOLERANCE_ACTIVE_PASSIVE_HEAD} feature gate "
            "to be enabled",
        )
        return
    if (wire.text(options, "backend") or "redis") == c.GCS_STORAGE_ROCKSDB_VALUE:
        yield FieldError(options_at, "activePassiveOptions is only supported with the 'redis' backend")


def label_delivery(spec: JSON, at: str, annotations: dict[str, str], allowed: Sequence[str]) -> Errors:
    """The validating webhooks' labelMappings rules (see the module's docstring); the object's own
    annotations are checked at `metadata.annotations`."""
    groups = [
        (i, g) for i, g in enumerate(wire.objs(spec, "workerGroupSpecs")) if wire.has(g, "labelMappings")
    ]
    if groups and annotations.get(c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION, "").lower() == "true":
        yield FieldError(
            f"metadata.annotations[{c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION}]",
            f"{c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION} cannot be set with labelMappings: KubeRay must generate "
            "the ray start command that reads the delivered labels",
        )
    for i, group in groups:
        group_at = f"{at}.workerGroupSpecs[{i}]"
        keys: set[str] = set()
        for j, mapping in enumerate(wire.objs(group, "labelMappings")):
            label = wire.text(mapping, "nodeLabel")
            key = wire.text(mapping, "mapTo") or label
            if label not in allowed:
                yield FieldError(
                    f"{group_at}.labelMappings[{j}].nodeLabel",
                    f"node label {label} is not in the operator's allowedNodeLabels",
                )
            if key in keys:
                yield FieldError(
                    f"{group_at}.labelMappings[{j}]",
                    f"Ray label {key} is delivered by more than one labelMapping",
                )
            keys.add(key)
        template = wire.obj(group, "template")
        template_annotations = wire.strings(wire.obj(template, "metadata"), "annotations")
        if template_annotations.get(c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION, "").lower() == "true":
            yield FieldError(
                f"{group_at}.template.metadata.annotations[{c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION}]",
                f"{c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION} cannot be set with labelMappings",
            )
        containers = wire.objs(wire.obj(template, "spec"), "containers")
        if containers:
            line = " ".join(str(part) for part in [*(containers[0].get("command") or ()), *(containers[0].get("args") or ())])  # fmt: skip
            if "ray start" in line:
                yield FieldError(
                    f"{group_at}.template.spec.containers[0].command",
                    "the Ray container cannot run ray start itself with labelMappings: KubeRay generates it",
                )
