"""Feature gates: upstream KubeRay's names and defaults, in one place.

A `FeatureGates` value is immutable and passed explicitly to whatever depends on a gate (builders,
validation, controllers); nothing reads a global. `FeatureGates.parse` accepts the `--feature-gates`
syntax (``Name=true,Other=false``) and refuses unknown names and non-boolean values, as upstream does at
start-up. `FeatureGates.from_environment` reads the environment beside the flag: `KUBERAY_FEATURE_<GATE>=true|false`,
the gate's name in upper case; the flag wins where both name a gate (`overlaid`), and every override remembers where it
came from (`sources`) so the operator can say so at start.
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


ENV_PREFIX = "KUBERAY_FEATURE_"
FLAG_SOURCE = "--feature-gates"
DEFAULT_SOURCE = "default"


class FeatureGateError(InputError):
    """A `--feature-gates` value or a `KUBERAY_FEATURE_*` variable names an unknown gate or is not boolean."""


def _known() -> str:
    return ", ".join(sorted(f.value for f in Feature))


@dataclass(frozen=True)
class FeatureGates:
    """The enabled state of every gate; gates not overridden keep upstream's default."""

    overrides: Mapping[Feature, bool] = field(default_factory=dict)
    # Where each override came from: FLAG_SOURCE or the environment variable's name.
    sources: Mapping[Feature, str] = field(default_factory=dict)

    def enabled(self, feature: Feature) -> bool:
        return self.overrides.get(feature, DEFAULTS[feature])

    def source(self, feature: Feature) -> str:
        return self.sources.get(feature, DEFAULT_SOURCE)

    def describe(self) -> str:
        """Every gate in force and where its value came from, e.g. `RayCronJob=true (--feature-gates)`."""
        return ", ".join(f"{f.value}={str(self.enabled(f)).lower()} ({self.source(f)})" for f in Feature)

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
                raise FeatureGateError(
                    f"unrecognized feature gate: {name} (known gates: {_known()})"
                ) from None
            if not sep or raw.lower() not in ("true", "false"):
                raise FeatureGateError(f"invalid value of {name}: {raw!r}, err: expected true or false")
            overrides[feature] = raw.lower() == "true"
        return cls(MappingProxyType(overrides), MappingProxyType(dict.fromkeys(overrides, FLAG_SOURCE)))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> FeatureGates:
        """The `KUBERAY_FEATURE_<GATE>` variables of `environ`; an unknown gate or a value other than
        true/false (any case) is refused with a message naming the variable."""
        by_variable = {ENV_PREFIX + f.value.upper(): f for f in Feature}
        overrides: dict[Feature, bool] = {}
        sources: dict[Feature, str] = {}
        for variable in sorted(v for v in environ if v.startswith(ENV_PREFIX)):
            raw = environ[variable]
            feature = by_variable.get(variable)
            if feature is None:
                raise FeatureGateError(
                    f"invalid environment variable {variable}: unrecognized feature gate "
                    f"{variable.removeprefix(ENV_PREFIX)} (known gates: {_known()})"
                )
            if raw.lower() not in ("true", "false"):
                raise FeatureGateError(
                    f"invalid environment variable {variable}={raw!r}: expected true or false"
                )
            overrides[feature] = raw.lower() == "true"
            sources[feature] = variable
        return cls(MappingProxyType(overrides), MappingProxyType(sources))

    def overlaid(self, winner: FeatureGates) -> FeatureGates:
        """These gates with `winner`'s overrides on top (the flag's over the environment's)."""
        return FeatureGates(
            MappingProxyType({**self.overrides, **winner.overrides}),
            MappingProxyType({**self.sources, **winner.sources}),
        )

    @classmethod
    def from_mapping(cls, values: Mapping[str, bool]) -> FeatureGates:
        """Builds gates from a ``{name: bool}`` mapping (a structured settings file, a test case)."""
        return cls.parse(",".join(f"{name}={str(value).lower()}" for name, value in values.items()))
