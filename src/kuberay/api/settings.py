"""The operator's settings tree: everything the operator is told at start-up, read once and passed down.

    OperatorSettings
    ├── config            Configuration: upstream's flags, or its `--config` file (kuberay.api.config)
    ├── feature_gates     FeatureGates: `--feature-gates` (kuberay.api.features)
    ├── kubeconfig, log_level, config_file, forced_cluster_upgrade
    ├── leader_election   LeaderElectionSettings: `--leader-election-*` timings (ours)
    ├── runtime           RuntimeSettings: `--reconcile-timeout` (ours)
    ├── webhook           WebhookSettings: `--webhook-port`, `--webhook-cert-dir` (controller-runtime's defaults)
    └── environment       Environment: the operator's environment variables
        ├── pods          PodEnvironment: what shapes every Ray pod and head Service
        ├── raycluster    RayClusterEnvironment
        ├── rayjob        RayJobEnvironment
        ├── rayservice    RayServiceEnvironment
        ├── raycronjob    RayCronJobEnvironment
        └── webhook       WebhookEnvironment: ENABLE_WEBHOOKS

`kuberay.operator.settings` builds the tree once (flags, config file, `os.environ`); controllers receive it
as an argument and nothing below the operator reads the environment. Every environment variable is declared
once, below, as a field of its branch: upstream's name, the default, the parsing rule and what it means.
`Environment.variables()` lists them all; `kuberay-operator --help` prints them.

Parsing follows upstream. Where upstream falls back on a value it cannot parse (`strconv.Atoi` of its
integer variables; Go's runtime for `TZ`), so do we, and `Environment.read` reports each fallback as one
line naming the variable, the bad value and the value used, for the operator to log as a Warning: a
deployment that runs upstream's operator must not crash-loop with ours. A variable that is ours alone, with
no upstream fallback to follow, is refused with `EnvVarError` naming it. Boolean variables keep upstream's
rules, under which every value has a meaning ("on unless `false`" or "off unless `true`", case-insensitive).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kuberay.api import constants
from kuberay.api.config import Configuration
from kuberay.api.errors import InputError
from kuberay.api.features import FeatureGates
from kubesemantics import goparse

DEFAULT_RECONCILE_TIMEOUT_SECONDS: Final = 300.0
DEFAULT_RAYJOB_CLUSTER_START_TIMEOUT_SECONDS: Final = 300
RAYJOB_CLUSTER_START_TIMEOUT_SECONDS: Final = "RAYJOB_CLUSTER_START_TIMEOUT_SECONDS"
ENABLE_ZERO_DOWNTIME: Final = "ENABLE_ZERO_DOWNTIME"
RAYSERVICE_UPGRADE_TIMEOUT_SECONDS: Final = "RAYSERVICE_UPGRADE_TIMEOUT_SECONDS"

# Go's strconv.Atoi: an optional sign and decimal digits, nothing else (no blanks, no underscores).
_ATOI = re.compile(r"[+-]?[0-9]+")


class EnvVarError(InputError):
    """An environment variable has a value the operator cannot use; the message names it."""


def _on_unless_false(raw: str) -> bool:
    return raw.lower() != "false"


def _on_if_true(raw: str) -> bool:
    return raw.lower() == "true"


def _atoi(raw: str) -> int:
    if not _ATOI.fullmatch(raw):
        raise ValueError("must be an integer number of seconds")
    return int(raw)


def _positive_or_default(default: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = _atoi(raw)
        return value if value > 0 else default

    return parse


def _seconds_or_no_limit(raw: str) -> float | None:
    value = _atoi(raw)
    return float(value) if value > 0 else None


AS_UNSET: Final = object()


@dataclass(frozen=True)
class Variable:
    """One environment variable of the operator: its name, its rule and what it means."""

    name: str
    parse: Callable[[str], Any]
    rule: str
    meaning: str
    # What upstream uses when the value does not parse; REFUSE: the value stops the operator.
    fallback: Any
    # What a set but empty value means; AS_UNSET: the default, as upstream's os.Getenv reads it.
    empty: Any = AS_UNSET


REFUSE: Final = object()


def _variable(
    name: str,
    default: Any,
    parse: Callable[[str], Any],
    rule: str,
    meaning: str,
    fallback: Any = REFUSE,
    empty: Any = AS_UNSET,
) -> Any:
    """A settings field read from the environment variable `name`; unset keeps `default`, and so does an
    empty value unless `empty` says what it means."""
    return field(
        default=default, metadata={"variable": Variable(name, parse, rule, meaning, fallback, empty)}
    )


ON_UNLESS_FALSE: Final = "on unless the value is `false` (any case)"
OFF_UNLESS_TRUE: Final = "off unless the value is `true` (any case)"


def _switch(name: str, default: bool, meaning: str) -> Any:
    """A boolean settings field; upstream's rule follows from its default: a switch that is on by default
    is on unless `false`, one that is off by default is off unless `true`."""
    if default:
        return _variable(name, True, _on_unless_false, ON_UNLESS_FALSE, meaning)
    return _variable(name, False, _on_if_true, OFF_UNLESS_TRUE, meaning)


@dataclass(frozen=True)
class PodEnvironment:
    """What shapes every Ray pod and head Service, whichever controller builds them."""

    cluster_domain: str = _variable(
        constants.CLUSTER_DOMAIN,
        constants.DEFAULT_CLUSTER_DOMAIN,
        str,
        "any non-empty value",
        "DNS suffix of in-cluster names (FQ_RAY_IP, the dashboard address)",
    )
    login_shell: bool = _switch(
        constants.ENABLE_LOGIN_SHELL, False, "generated commands run in a login shell (`bash -cl`)"
    )
    init_container_injection: bool = _switch(
        "ENABLE_INIT_CONTAINER_INJECTION",
        True,
        "workers wait for the GCS in the `wait-gcs-ready` init container",
    )
    probes_injection: bool = _switch(
        constants.ENABLE_PROBES_INJECTION, True, "Ray containers get readiness and liveness probes"
    )
    deterministic_head_pod_name: bool = _switch(
        constants.ENABLE_DETERMINISTIC_HEAD_POD_NAME,
        False,
        "the head pod is named `<cluster>-head` instead of a generated name",
    )
    cluster_ip_head_service: bool = _switch(
        constants.ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE,
        False,
        "the head Service gets a cluster IP instead of being headless",
    )


@dataclass(frozen=True)
class RayClusterEnvironment:
    requeue_seconds: float = _variable(
        constants.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV,
        float(constants.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS),
        lambda raw: float(_atoi(raw)),
        "integer seconds; not an integer: the default, as upstream",
        "the periodic resync of a settled RayCluster",
        fallback=float(constants.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS),
    )
    random_pod_delete: bool = _switch(
        constants.ENABLE_RANDOM_POD_DELETE,
        False,
        "with autoscaling on, surplus workers are deleted without the autoscaler choosing them",
    )
    gcs_ft_redis_cleanup: bool = _switch(
        constants.ENABLE_GCS_FT_REDIS_CLEANUP,
        True,
        "a deleted GCS-FT cluster's Redis keys are removed by a cleanup Job",
    )
    use_ingress_on_openshift: bool = _switch(
        constants.USE_INGRESS_ON_OPENSHIFT,
        False,
        "on OpenShift, expose the head with an Ingress rather than a Route",
    )


@dataclass(frozen=True)
class RayJobEnvironment:
    transition_grace_period: int = _variable(
        constants.RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
        constants.DEFAULT_RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
        _atoi,
        "integer seconds (any integer, as upstream); not an integer: the default",
        "how long a finished job may wait for its deployment status to follow",
        fallback=constants.DEFAULT_RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
    )
    status_check_timeout: int = _variable(
        constants.RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS,
        constants.DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS,
        _positive_or_default(constants.DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS),
        "integer seconds; 0 or less, or not an integer: the default, as upstream",
        "how long job-status checks may keep failing before the RayJob fails",
        fallback=constants.DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS,
    )
    delete_after_job_finishes: bool = _switch(
        constants.DELETE_RAYJOB_CR_AFTER_JOB_FINISHES,
        False,
        "a finished RayJob deletes itself (or the config file's deleteRayJobAfterJobFinishes)",
    )
    cluster_start_timeout: float | None = _variable(
        RAYJOB_CLUSTER_START_TIMEOUT_SECONDS,
        float(DEFAULT_RAYJOB_CLUSTER_START_TIMEOUT_SECONDS),
        _seconds_or_no_limit,
        "integer seconds; 0 or less waits forever (ours, not upstream's)",
        "how long an attempt may stay Initializing while its cluster cannot start",
    )


@dataclass(frozen=True)
class RayServiceEnvironment:
    zero_downtime: bool = _switch(
        ENABLE_ZERO_DOWNTIME,
        True,
        "a RayService without spec.upgradeStrategy upgrades by starting a new cluster",
    )
    upgrade_timeout: float | None = _variable(
        RAYSERVICE_UPGRADE_TIMEOUT_SECONDS,
        None,
        _seconds_or_no_limit,
        "integer seconds; unset, 0 or less is no limit (ours, not upstream's)",
        "how long a pending cluster may take to become ready before the upgrade is abandoned",
    )


def _zone_name(raw: str) -> str:
    # glibc's and Go's TZ may start with ':' before the zone name.
    name = raw.removeprefix(":")
    try:
        goparse.load_location(name)
    except goparse.GoParseError as e:
        raise ValueError(str(e)) from None
    return name


@dataclass(frozen=True)
class RayCronJobEnvironment:
    local_time_zone: str = _variable(
        "TZ",
        "Local",
        _zone_name,
        "an IANA time zone name; unset: the machine's zone (/etc/localtime); empty or unknown: UTC, as Go's "
        "time.Local",
        "the operator's local time zone: a RayCronJob without spec.timeZone is scheduled in it",
        fallback="UTC",
        # Go's time package tells TZ="" (UTC) from no TZ at all (the machine's zone).
        empty="UTC",
    )


def _exactly_true(raw: str) -> bool:
    return raw == "true"


@dataclass(frozen=True)
class WebhookEnvironment:
    enabled: bool = _variable(
        constants.ENABLE_WEBHOOKS,
        False,
        _exactly_true,
        "on only when the value is exactly `true`",
        "serve the validating admission webhooks for RayClusters, RayJobs and RayServices, and Node Label "
        "Delivery's mutating ones for pods and pods/binding (over TLS, see --webhook-cert-dir)",
    )


@dataclass(frozen=True)
class Environment:
    """The operator's environment variables, by the part of the operator that reads them."""

    pods: PodEnvironment = field(default_factory=PodEnvironment)
    raycluster: RayClusterEnvironment = field(default_factory=RayClusterEnvironment)
    rayjob: RayJobEnvironment = field(default_factory=RayJobEnvironment)
    rayservice: RayServiceEnvironment = field(default_factory=RayServiceEnvironment)
    raycronjob: RayCronJobEnvironment = field(default_factory=RayCronJobEnvironment)
    webhook: WebhookEnvironment = field(default_factory=WebhookEnvironment)

    @classmethod
    def branches(cls) -> Iterator[tuple[str, type[Any]]]:
        """(attribute, dataclass) of each branch."""
        for branch in dataclasses.fields(cls):
            yield branch.name, branch.default_factory  # type: ignore[misc]

    @classmethod
    def variables(cls) -> Iterator[tuple[str, Any, Variable]]:
        """Every variable: (`branch.field`, default, declaration)."""
        for name, branch in cls.branches():
            for leaf in dataclasses.fields(branch):
                yield f"{name}.{leaf.name}", leaf.default, leaf.metadata["variable"]

    @classmethod
    def read(cls, environ: Mapping[str, str]) -> tuple[Environment, list[str]]:
        """Every declared variable from `environ`, and one line per value that fell back as upstream's
        does; raises `EnvVarError` naming a bad value upstream refuses too (or that only we read)."""
        branches: dict[str, dict[str, Any]] = {}
        fallbacks: list[str] = []
        for path, _, variable in cls.variables():
            raw = environ.get(variable.name, "")
            if not raw and (variable.name not in environ or variable.empty is AS_UNSET):
                continue
            try:
                value = variable.parse(raw) if raw else variable.empty
            except ValueError as e:
                if variable.fallback is REFUSE:
                    raise EnvVarError(f"invalid environment variable {variable.name}={raw!r}: {e}") from None
                value = variable.fallback
                shown = int(value) if isinstance(value, float) and value.is_integer() else value
                fallbacks.append(
                    f"invalid environment variable {variable.name}={raw!r} ({e}); using {shown!r} as upstream does"
                )
            branch, leaf = path.split(".")
            branches.setdefault(branch, {})[leaf] = value
        return cls(**{name: branch(**branches.get(name, {})) for name, branch in cls.branches()}), fallbacks

    @classmethod
    def from_mapping(cls, environ: Mapping[str, str]) -> Environment:
        """`read`'s environment, the fallbacks left unsaid (tests, tools that print no log)."""
        return cls.read(environ)[0]


@dataclass(frozen=True)
class LeaderElectionSettings:
    """client-go's default timings; tests and small clusters shorten them."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class RuntimeSettings:
    # A reconcile still running after this long is cancelled and retried with backoff: one stuck call
    # (an API server that accepts and never answers) must not hold a worker forever. Five minutes is far
    # beyond any healthy reconcile, which makes a bounded number of short API calls and never waits on Ray.
    reconcile_timeout: float = DEFAULT_RECONCILE_TIMEOUT_SECONDS


# controller-runtime's webhook server defaults, which upstream's operator keeps.
DEFAULT_WEBHOOK_PORT: Final = 9443
DEFAULT_WEBHOOK_CERT_DIR: Final = "/tmp/k8s-webhook-server/serving-certs"


@dataclass(frozen=True)
class WebhookSettings:
    """Where the admission webhook listens and the directory holding its `tls.crt` and `tls.key`."""

    port: int = DEFAULT_WEBHOOK_PORT
    cert_dir: str = DEFAULT_WEBHOOK_CERT_DIR


@dataclass(frozen=True)
class OperatorSettings:
    """The root of the tree; immutable, built once by `kuberay.operator.settings.parse`."""

    config: Configuration = field(default_factory=Configuration)
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    environment: Environment = field(default_factory=Environment)
    leader_election: LeaderElectionSettings = field(default_factory=LeaderElectionSettings)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    # `--kubeconfig`, else the KUBECONFIG variable's first path; None: in-cluster, then ~/.kube/config.
    kubeconfig: str | None = None
    log_level: str = "info"
    config_file: str | None = None
    forced_cluster_upgrade: bool = False
    # One line per environment value that fell back as upstream's does, logged as Warnings at start.
    fallbacks: tuple[str, ...] = ()

    @property
    def watch_namespaces(self) -> list[str]:
        """The namespaces to cache, or an empty list for all of them."""
        return [ns.strip() for ns in self.config.watch_namespace.split(",") if ns.strip()]

    @property
    def delete_rayjob_after_job_finishes(self) -> bool:
        """The config file's `deleteRayJobAfterJobFinishes` or DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, as
        upstream's RayJob controller combines them."""
        return (
            self.config.delete_ray_job_after_job_finishes or self.environment.rayjob.delete_after_job_finishes
        )
