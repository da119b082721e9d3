"""Feature gates: upstream KubeRay's names, stages and defaults, in one place, read as Kubernetes'
component-base `featuregate` reads them.

A `FeatureGates` value is immutable and passed explicitly to whatever depends on a gate (builders,
validation, controllers); nothing reads a global.

`GateRequests.parse` reads the `--feature-gates` syntax as component-base's `featureGate.Set` does:
``Name=value`` items split on commas (empty items skipped, names and values trimmed of white space), values
in Go's `strconv.ParseBool` spellings (``1 t T TRUE true True``, ``0 f F FALSE false False``), a later item
for the same name winning. Besides the gates, the special names ``AllAlpha`` and ``AllBeta`` set every alpha
(beta) gate not named explicitly; GA and deprecated gates are left alone. An unknown name, a value that is no
boolean or a locked gate set away from its default is refused with component-base's message.

`GateRequests.from_environment` reads the environment beside the flag: `KUBERAY_FEATURE_<GATE>=value`, the
gate's name in upper case (``KUBERAY_FEATURE_ALLALPHA`` for ``AllAlpha``), the same values as the flag. The
flag wins where both name a gate (`overlaid`); the two then resolve as one component-base gate map would, so a
gate named in either beats ``AllAlpha``/``AllBeta`` from either. Every value in force remembers where it came
from (`FeatureGates.source`) so the operator can say so at start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from kuberay.api.errors import InputError
from kubesemantics import goparse


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
    # Upstream v1.8's; the table knows them so the flag accepts them, nothing here acts on them yet.
    TOPOLOGY_LABEL_DELIVERY = "TopologyLabelDelivery"
    GCS_FAULT_TOLERANCE_ACTIVE_PASSIVE_HEAD = "GCSFaultToleranceActivePassiveHead"


class Stage(StrEnum):
    """component-base's `prerelease` values (GA is its empty string)."""

    ALPHA = "ALPHA"
    BETA = "BETA"
    GA = ""
    DEPRECATED = "DEPRECATED"


@dataclass(frozen=True)
class GateSpec:
    """component-base's `FeatureSpec`: a locked gate cannot be set away from its default."""

    default: bool
    stage: Stage
    locked: bool = False


SPECS: Mapping[Feature, GateSpec] = MappingProxyType(
    {
        Feature.RAY_CLUSTER_STATUS_CONDITIONS: GateSpec(True, Stage.BETA),
        Feature.RAY_JOB_DELETION_POLICY: GateSpec(True, Stage.BETA),
        Feature.RAY_MULTI_HOST_INDEXING: GateSpec(True, Stage.BETA),
        Feature.RAY_SERVICE_INCREMENTAL_UPGRADE: GateSpec(True, Stage.BETA),
        Feature.RAY_CRON_JOB: GateSpec(False, Stage.ALPHA),
        Feature.SIDECAR_SUBMITTER_RESTART: GateSpec(False, Stage.ALPHA),
        Feature.RAY_CLUSTER_NETWORK_POLICY: GateSpec(False, Stage.ALPHA),
        Feature.GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE: GateSpec(False, Stage.ALPHA),
        Feature.RAY_CLUSTER_MTLS: GateSpec(False, Stage.ALPHA),
        Feature.RAY_CLUSTER_HISTORY_SERVER: GateSpec(False, Stage.ALPHA),
        Feature.KUBERNETES_WAS: GateSpec(False, Stage.ALPHA),
        Feature.TOPOLOGY_LABEL_DELIVERY: GateSpec(False, Stage.ALPHA),
        Feature.GCS_FAULT_TOLERANCE_ACTIVE_PASSIVE_HEAD: GateSpec(False, Stage.ALPHA),
    }
)

DEFAULTS: Mapping[Feature, bool] = MappingProxyType({f: spec.default for f, spec in SPECS.items()})

ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"
# The stage each special name sweeps over.
SWEEPS: Mapping[str, Stage] = MappingProxyType({ALL_ALPHA: Stage.ALPHA, ALL_BETA: Stage.BETA})

ENV_PREFIX = "KUBERAY_FEATURE_"
FLAG_SOURCE = "--feature-gates"
DEFAULT_SOURCE = "default"

_BY_NAME: Mapping[str, GateSpec] = MappingProxyType({f.value: spec for f, spec in SPECS.items()})
# Go's `strings.TrimSpace` trims `unicode.IsSpace`, a narrower set than Python's `str.strip()`.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)


class FeatureGateError(InputError):
    """A `--feature-gates` value or a `KUBERAY_FEATURE_*` variable names an unknown gate, is not boolean or
    sets a locked gate away from its default."""


def _shown(text: str) -> str:
    # component-base prints names and values raw; escaping the unprintable keeps the message one line.
    return text if text.isprintable() else goparse.quote(text)[1:-1]


def _aggregate(messages: list[str]) -> str:
    # apimachinery's `errors.NewAggregate(...).Error()`: one message alone, else "[a, b]" without repeats.
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def split_spec(spec: str) -> dict[str, bool]:
    """The ``{name: value}`` of a `--feature-gates` string, as component-base's `featureGate.Set` splits it
    before looking at the names."""
    requests: dict[str, bool] = {}
    for item in spec.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip(_GO_SPACE)
        if not sep:
            raise FeatureGateError(f"missing bool value for {_shown(name)}")
        raw = raw.strip(_GO_SPACE)
        try:
            requests[name] = goparse.parse_bool(raw)
        except goparse.GoParseError as e:
            raise FeatureGateError(f"invalid value of {_shown(name)}={_shown(raw)}, err: {e}") from None
    return requests


def check_requests(requests: Mapping[str, bool], specs: Mapping[str, GateSpec] = _BY_NAME) -> None:
    """component-base's checks of a gate map against its known gates: the first unknown name ends the
    check, locked gates set away from their default are all reported."""
    problems: list[str] = []
    for name, value in requests.items():
        spec = specs.get(name)
        if spec is None and name not in SWEEPS:
            problems.append(f"unrecognized feature gate: {_shown(name)}")
            break
        if spec is not None and spec.locked and value != spec.default:
            problems.append(
                f"cannot set feature gate {name} to {str(value).lower()}, "
                f"feature is locked to {str(spec.default).lower()}"
            )
    if problems:
        raise FeatureGateError(_aggregate(problems))


def effective(requests: Mapping[str, bool], specs: Mapping[str, GateSpec] = _BY_NAME) -> dict[str, str]:
    """For every gate that `requests` (checked ones) set, the name that sets it: the gate's own, else the
    ``AllAlpha``/``AllBeta`` sweeping its stage; the value is ``requests[that name]``."""
    setters = {name: name for name in requests if name in specs}
    for sweep, stage in SWEEPS.items():
        if sweep in requests:
            for name, spec in specs.items():
                if spec.stage == stage:
                    setters.setdefault(name, sweep)
    return setters


@dataclass(frozen=True)
class GateRequests:
    """Gate settings as written, before ``AllAlpha``/``AllBeta`` are applied: the names (gates and the two
    special names) with their values, and where each came from (FLAG_SOURCE or a variable's name)."""

    values: Mapping[str, bool] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> GateRequests:
        """A `--feature-gates` value, checked as component-base checks it."""
        values = split_spec(spec)
        check_requests(values)
        return cls(MappingProxyType(values), MappingProxyType(dict.fromkeys(values, FLAG_SOURCE)))

    @classmethod
    def from_mapping(cls, values: Mapping[str, bool]) -> GateRequests:
        """A ``{name: bool}`` mapping (a structured settings file, a test case), checked as the flag is."""
        check_requests(values)
        return cls(MappingProxyType(dict(values)), MappingProxyType(dict.fromkeys(values, FLAG_SOURCE)))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> GateRequests:
        """The `KUBERAY_FEATURE_<GATE>` variables of `environ`; the first bad one, in name order, is refused
        with a message naming it."""
        by_variable = {ENV_PREFIX + name.upper(): name for name in [*_BY_NAME, *SWEEPS]}
        values: dict[str, bool] = {}
        sources: dict[str, str] = {}
        for variable in sorted(v for v in environ if v.startswith(ENV_PREFIX)):
            raw = environ[variable].strip(_GO_SPACE)
            name = by_variable.get(variable)
            try:
                if name is None:
                    raise FeatureGateError(
                        f"unrecognized feature gate: {_shown(variable.removeprefix(ENV_PREFIX))}"
                    )
                try:
                    value = goparse.parse_bool(raw)
                except goparse.GoParseError as e:
                    raise FeatureGateError(f"invalid value of {name}={_shown(raw)}, err: {e}") from None
                check_requests({name: value})
            except FeatureGateError as e:
                raise FeatureGateError(f"invalid environment variable {_shown(variable)}: {e}") from None
            values[name] = value
            sources[name] = variable
        return cls(MappingProxyType(values), MappingProxyType(sources))

    def overlaid(self, winner: GateRequests) -> GateRequests:
        """These requests with `winner`'s on top, name by name (the flag's over the environment's)."""
        return GateRequests(
            MappingProxyType({**self.values, **winner.values}),
            MappingProxyType({**self.sources, **winner.sources}),
        )

    def resolve(self) -> FeatureGates:
        """The gates in force: each named gate as named, the gates ``AllAlpha``/``AllBeta`` sweep as they
        say, the rest at their defaults."""
        overrides: dict[Feature, bool] = {}
        sources: dict[Feature, str] = {}
        for name, setter in effective(self.values).items():
            feature = Feature(name)
            overrides[feature] = self.values[setter]
            source = self.sources[setter]
            # A sweep from the flag says which one; a variable's name already does.
            sources[feature] = f"{source} {setter}" if setter != name and source == FLAG_SOURCE else source
        explicit = {Feature(name): self.values[name] for name in self.values if name in _BY_NAME}
        return FeatureGates(
            MappingProxyType(overrides), MappingProxyType(sources), MappingProxyType(explicit)
        )


@dataclass(frozen=True)
class FeatureGates:
    """The enabled state of every gate; gates not overridden keep upstream's default."""

    overrides: Mapping[Feature, bool] = field(default_factory=dict)
    # Where each override came from: FLAG_SOURCE (with the sweep's name when AllAlpha/AllBeta set it) or
    # the environment variable's name.
    sources: Mapping[Feature, str] = field(default_factory=dict)
    # The gates set by name (not by a sweep), for component-base's warnings about GA and deprecated ones.
    explicit: Mapping[Feature, bool] = field(default_factory=dict)

    def enabled(self, feature: Feature) -> bool:
        return self.overrides.get(feature, DEFAULTS[feature])

    def source(self, feature: Feature) -> str:
        return self.sources.get(feature, DEFAULT_SOURCE)

    def describe(self) -> str:
        """Every gate in force and where its value came from, e.g. `RayCronJob=true (--feature-gates)`."""
        return ", ".join(f"{f.value}={str(self.enabled(f)).lower()} ({self.source(f)})" for f in Feature)

    def warnings(self, specs: Mapping[Feature, GateSpec] = SPECS) -> list[str]:
        """component-base's start-up warnings: a GA or deprecated gate set by name will go away."""
        stages = {Stage.GA: "GA", Stage.DEPRECATED: "deprecated"}
        return [
            f"Warning: setting {stages[specs[f].stage]} feature gate. It will be removed in a future release. "
            f"featureGate={f.value} value={str(value).lower()}"
            for f, value in self.explicit.items()
            if specs[f].stage in stages
        ]

    @classmethod
    def parse(cls, spec: str) -> FeatureGates:
        """The gates a `--feature-gates` value (``Name=true,Other=0,AllAlpha=true``) puts in force."""
        return GateRequests.parse(spec).resolve()

    @classmethod
    def from_mapping(cls, values: Mapping[str, bool]) -> FeatureGates:
        """The gates a ``{name: bool}`` mapping (a structured settings file, a test case) puts in force."""
        return GateRequests.from_mapping(values).resolve()
