"""Every ray.io object among upstream's samples passes the schema check and our validation, as it does
upstream, with default feature gates; the few samples that use an alpha feature pass with its gate on and
fail without it with the gate's message."""

from __future__ import annotations

from typing import Any

import pytest

from kuberay.api import manifest
from kuberay.api.features import FeatureGates
from support.shared import UPSTREAM_SAMPLES

SAMPLES = UPSTREAM_SAMPLES
# Samples that use an alpha feature, off by default upstream too: the gate, and the error without it.
NEEDS_GATE = {
    "RayCluster/raycluster-embedded-gcs-ft": (
        "GCSFaultToleranceEmbeddedStorage",
        "spec.gcsFaultToleranceOptions.backend: the embedded RocksDB GCS fault tolerance backend "
        "(GcsFaultToleranceOptions.Backend: 'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature "
        "gate to be enabled",
    ),
    "RayCluster/raycluster-historyserver": (
        "RayClusterHistoryServer",
        "spec.historyServerOptions: RayClusterHistoryServer feature gate is not enabled",
    ),
    "RayCluster/raycluster-mtls": (
        "RayClusterMTLS",
        "spec.tlsOptions: spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled",
    ),
    "RayCluster/raycluster-deny-all": (
        "RayClusterNetworkPolicy",
        "spec.networkPolicy: spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
    ),
}


def sample_objects() -> list[Any]:
    found = []
    for path in sorted(SAMPLES.rglob("*.yaml")):
        for obj in manifest.ray_objects(path.read_text()):
            name = manifest.display_name(obj)
            found.append(pytest.param(obj, id=f"{path.relative_to(SAMPLES)}:{name}"))
    return found


OBJECTS = sample_objects()


def test_the_samples_hold_every_kind() -> None:
    kinds = {param.values[0]["kind"] for param in OBJECTS}
    assert kinds == {"RayCluster", "RayJob", "RayService", "RayCronJob"}
    assert len(OBJECTS) > 80


@pytest.mark.parametrize("obj", OBJECTS)
def test_sample_is_valid(obj: dict[str, Any]) -> None:
    name = manifest.display_name(obj)
    errors = [str(error) for error in manifest.check_object(obj, FeatureGates())]
    if name not in NEEDS_GATE:
        assert errors == []
        return
    gate, message = NEEDS_GATE[name]
    assert errors == [message]
    assert manifest.check_object(obj, FeatureGates.parse(f"{gate}=true")) == []
