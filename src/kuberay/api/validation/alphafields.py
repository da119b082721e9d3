"""Upstream v1.8's gated fields of a RayClusterSpec: `workerGroupSpecs[].labelMappings` (Node Label Delivery,
gate `TopologyLabelDelivery`) and `gcsFaultToleranceOptions.activePassiveOptions` (gate
`GCSFaultToleranceActivePassiveHead`).

What upstream's reconciler refuses: a field whose gate is off (kuberay#5289's `validateGcsActivePassiveHead`,
#5300's topology-group check), and active-passive heads on any backend but redis (#5289). The lease timings
are the CRD's CEL rules, not checked here. Neither feature is implemented here: with its gate on, a field is
accepted and kept, and does nothing yet.
"""

from __future__ import annotations

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
