"""Feature gates: upstream KubeRay's names and defaults, in one place.

A `FeatureGates` value is immutable and passed explicitly to whatever depends on a gate (builders,
validation, controllers); nothing reads a global. `FeatureGates.parse` accepts the `--feature-gates`
syntax (``Name=true,Other=false``) and refuses unknown names and non-boolean values, as upstream does at
start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from kuberay.api.errors import InputError


class Feature(StrEnum):
    RAY_CLUSTER_STATUS_CONDITIONS = "RayClusterStatusConditions"
    RAY_JOB_DELETION_POLICY = "RayJobDeletionPolicy"
    RAY_MULTI_HOST_INDEXING = "RayMultiHostIndexing"
    RAY_SERVICE_INCREMENTAL_UPGRADE = "RayServiceIncrementalUpgrade"
    RAY_CRON_JOB = "RayCronJob"
    SIDECAR_SUBMITTER_RESTART = "SidecarSubmitterRestart"
    RAY_CLUSTER_NETWORK_POLICY = "RayClusterNetworkPolicy"
    GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE = "GCSFaultToleranceEmbeddedStorage"
    RAY_CLUSTER_MTLS = "RayClusterMTLS"
    RAY_CLUSTER_HISTORY_SERVER = "RayClusterHistoryServer"
    KUBERNETES_WAS = "KubernetesWAS"


DEFAULTS: Mapping[Feature, bool] = MappingProxyType(
    {
        Feature.RAY_CLUSTER_STATUS_CONDITIONS: True,
        Feature.RAY_JOB_DELETION_POLICY: True,
        Feature.RAY_MULTI_HOST_INDEXING: True,
        Feature.RAY_SERVICE_INCREMENTAL_UPGRADE: True,
        Feature.RAY_CRON_JOB: False,
        Feature.SIDECAR_SUBMITTER_RESTART: False,
        Feature.RAY_CLUSTER_NETWORK_POLICY: False,
        Feature.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE: False,
        Feature.RAY_CLUSTER_MTLS: False,
        Feature.RAY_CLUSTER_HISTORY_SERVER: False,
        Feature.KUBERNETES_WAS: False,
    }
)


class FeatureGateError(InputError):
    """A `--feature-gates` value names an unknown gate or is not boolean."""


@dataclass(frozen=True)
class FeatureGates:
    """The enabled state of every gate; gates not overridden keep upstream's default."""

    overrides: Mapping[Feature, bool] = field(default_factory=dict)

    def enabled(self, feature: Feature) -> bool:
        return self.overrides.get(feature, DEFAULTS[feature])

    @classmethod
    def parse(cls, spec: str) -> FeatureGates:
        """Parses ``Name=true,Other=false`` (whitespace around items is ignored; an empty string is no
        override)."""
        overrides: dict[Feature, bool] = {}
        for item in (part.strip() for part in spec.split(",")):
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name, raw = name.strip(), raw.strip()
            try:
                feature = Feature(name)
            except ValueError:
                known = ", ".join(sorted(f.value for f in Feature))
                raise FeatureGateError(f"unrecognized feature gate: {name} (known gates: {known})") from None
            if not sep or raw.lower() not in ("true", "false"):
                raise FeatureGateError(f"invalid value of {name}: {raw!r}, err: expected true or false")
            overrides[feature] = raw.lower() == "true"
        return cls(MappingProxyType(overrides))

    @classmethod
    def from_mapping(cls, values: Mapping[str, bool]) -> FeatureGates:
        """Builds gates from a ``{name: bool}`` mapping (a structured settings file, a test case)."""
        return cls.parse(",".join(f"{name}={str(value).lower()}" for name, value in values.items()))
