"""Building the operator's settings tree (`kuberay.api.settings`) once at start-up: upstream's flags, or the
`--config` file, plus feature gates, connection, and the operator's environment variables.

Flags are Go-style, as upstream's: `-flag` or `--flag`, `--flag=value` or `--flag value`, and booleans as
`--flag` or `--flag=false`. As upstream, when `--config` names a Configuration file every flag it covers is
ignored (`--feature-gates`, `--kubeconfig` and the logging level still apply). A bad flag, an unreadable or
invalid config file, an unknown feature gate, a value that is no Go boolean or a locked gate set away from its
default (in `--feature-gates` or a `KUBERAY_FEATURE_<GATE>` variable, refused with component-base's
messages), or an environment variable with an unusable value that upstream refuses too
raises `SettingsError` with one line that names it; `main` prints it and exits with status 2. This is the only place
the operator reads its environment.

Flags beyond upstream's: `--kubeconfig` (controller-runtime's), `--zap-log-level`, and the leader-election
timings (`--leader-election-lease-duration`, `--leader-election-renew-deadline`,
`--leader-election-retry-period`, client-go's defaults), which tests and small clusters shorten, and
`--reconcile-timeout` (seconds one reconcile may run before the runtime cancels and retries it), and
`--webhook-port` / `--webhook-cert-dir` for the admission webhook (upstream keeps controller-runtime's
defaults, 9443 and `/tmp/k8s-webhook-server/serving-certs`, which these flags default to).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from kuberay.api.config import (
    DEFAULT_BURST,
    DEFAULT_METRICS_ADDR,
    DEFAULT_PROBE_ADDR,
    DEFAULT_QPS,
    DEFAULT_RECONCILE_CONCURRENCY,
    ConfigError,
    Configuration,
    check_label_keys,
)
from kuberay.api.features import ALL_ALPHA, ENV_PREFIX, SPECS, FeatureGateError, GateRequests, Stage
from kuberay.api.settings import (
    Environment,
    EnvVarError,
    LeaderElectionSettings,
    OperatorSettings,
    RuntimeSettings,
    WebhookSettings,
)
from kuberay.errors import KubeRayError
from kubesemantics import goparse

LOG_LEVELS = ("debug", "info", "error")


class SettingsError(KubeRayError):
    """The command line or the config file is unusable; the message is one line naming the culprit. The
    operator package's only error, so its root."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise SettingsError(message)


def _go_bool(value: str) -> bool:
    try:
        return goparse.parse_bool(value)
    except goparse.GoParseError:
        raise argparse.ArgumentTypeError(f"invalid boolean value {value!r}") from None


def _positive_seconds(value: str) -> float:
    seconds = float(value)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return seconds


def _csv(value: str) -> list[str]:
    # A comma-separated list flag: items trimmed, empty ones dropped (`--x=` is the empty list).
    return [item.strip() for item in value.split(",") if item.strip()]


def _label_keys(value: str) -> list[str]:
    try:
        return check_label_keys(_csv(value))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _shown(default: object) -> str:
    if isinstance(default, bool):
        return "on" if default else "off"
    if default is None:
        return "unset"
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def _environment_help() -> str:
    lines = ["environment variables:"]
    for _, default, variable in Environment.variables():
        lines.append(f"  {variable.name} (default {_shown(default)}; {variable.rule})")
        lines.append(f"      {variable.meaning}")
    lines.append(
        f"  {ENV_PREFIX}<GATE> (a boolean as --feature-gates takes it; the gate's name in upper case, e.g. "
        f"{ENV_PREFIX}RAYCRONJOB or {ENV_PREFIX}{ALL_ALPHA.upper()})"
    )
    lines.append("      a feature gate, as --feature-gates sets it; the flag wins where both name a gate")
    return "\n".join(lines)


def _feature_gates_help() -> str:
    # Upstream's text, then the gates in component-base's `KnownFeatures` form (GA ones are not listed).
    known = [
        f"{name}=true|false ({spec.stage} - default={str(spec.default).lower()})"
        for name, spec in sorted(SPECS.items())
        if spec.stage in (Stage.ALPHA, Stage.BETA)
    ]
    return (
        "A set of key=value pairs that describe feature gates. E.g. FeatureOne=true,FeatureTwo=false,... "
        "Options are: AllAlpha=true|false (ALPHA - default=false), AllBeta=true|false (BETA - default=false), "
        + ", ".join(known)
    )


def _parser() -> _Parser:
    parser = _Parser(
        prog="kuberay-operator",
        allow_abbrev=False,
        add_help=True,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_environment_help(),
    )

    def flag(name: str, **kwargs: Any) -> None:
        parser.add_argument(f"--{name}", f"-{name}", dest=name.replace("-", "_"), **kwargs)

    def bool_flag(name: str, default: bool, help: str) -> None:
        flag(name, type=_go_bool, nargs="?", const=True, default=default, metavar="BOOL", help=help)

    flag("metrics-addr", default=DEFAULT_METRICS_ADDR, help="The address the metric endpoint binds to.")
    flag(
        "health-probe-bind-address",
        default=DEFAULT_PROBE_ADDR,
        help="The address the probe endpoint binds to.",
    )
    bool_flag("enable-leader-election", True, "Enable leader election for controller manager.")
    flag("leader-election-namespace", default="", help="Namespace where the leader election resource lives.")
    flag(
        "reconcile-concurrency",
        type=int,
        default=DEFAULT_RECONCILE_CONCURRENCY,
        help="max concurrency for reconciling",
    )
    flag("watch-namespace", default="", help="Comma-separated namespaces to watch; empty watches all.")
    bool_flag("forced-cluster-upgrade", False, "(Deprecated) Forced cluster upgrade flag")
    flag("log-file-path", default="", help="Synchronize logs to local file")
    flag("log-file-encoder", default="json", choices=("json", "console"), help="Encoder to use for log file.")
    flag(
        "log-stdout-encoder",
        default="json",
        choices=("json", "console"),
        help="Encoder to use for logging stdout.",
    )
    bool_flag("enable-batch-scheduler", False, "(Deprecated) Enable batch scheduler; use --batch-scheduler.")
    flag(
        "batch-scheduler",
        default="",
        help="Batch scheduler name: volcano, yunikorn, kai-scheduler, scheduler-plugins.",
    )
    flag(
        "config", default="", help="Path to structured config file. Flags are ignored if config file is set."
    )
    bool_flag(
        "use-kubernetes-proxy",
        False,
        "Use Kubernetes proxy subresource when connecting to the Ray Head node.",
    )
    flag("feature-gates", default="", help=_feature_gates_help())
    bool_flag("enable-metrics", False, "Enable the emission of control plane metrics.")
    flag(
        "qps",
        type=float,
        default=DEFAULT_QPS,
        help="The QPS value for the client communicating with the Kubernetes API server, per resource kind.",
    )
    flag(
        "burst",
        type=int,
        default=DEFAULT_BURST,
        help="The maximum burst for throttling requests to the Kubernetes API server, per resource kind.",
    )
    # Upstream v1.8's: the node labels are accepted and checked (nothing delivers them yet); any forwarder list
    # set runs the node event forwarder (`kuberay.controllers.nodeevents`).
    flag(
        "allowed-node-labels",
        type=_label_keys,
        default=[],
        help="Comma-separated node label keys that Node Label Delivery may copy to Ray nodes.",
    )
    for what in ("sources", "reasons", "types"):
        flag(
            f"node-event-forwarder-{what}",
            type=_csv,
            default=[],
            help=f"Comma-separated {what} of the Node Events the node event forwarder forwards.",
        )
    flag("kubeconfig", default="", help="Path to a kubeconfig (else KUBECONFIG, in-cluster, ~/.kube/config).")
    flag("zap-log-level", default="info", choices=LOG_LEVELS, help="Minimum level logged.")
    timings = LeaderElectionSettings()
    flag("leader-election-lease-duration", type=_positive_seconds, default=timings.lease_duration)
    flag("leader-election-renew-deadline", type=_positive_seconds, default=timings.renew_deadline)
    flag("leader-election-retry-period", type=_positive_seconds, default=timings.retry_period)
    flag(
        "webhook-port",
        type=int,
        default=WebhookSettings().port,
        help="The port the admission webhook serves on (with ENABLE_WEBHOOKS=true).",
    )
    flag(
        "webhook-cert-dir",
        default=WebhookSettings().cert_dir,
        help="The directory holding the webhook's tls.crt and tls.key.",
    )
    flag(
        "reconcile-timeout",
        type=_positive_seconds,
        default=RuntimeSettings().reconcile_timeout,
        help="Seconds one reconcile may run before it is cancelled and retried with backoff.",
    )
    return parser


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> OperatorSettings:
    """The settings tree from the command line, the config file it names and `environ` (the process
    environment when None)."""
    environ = os.environ if environ is None else environ
    args = _parser().parse_args(list(argv))
    try:
        environment, fallbacks = Environment.read(environ)
    except EnvVarError as e:
        raise SettingsError(str(e)) from None
    try:
        environment_gates = GateRequests.from_environment(environ)
    except FeatureGateError as e:
        raise SettingsError(str(e)) from None
    try:
        gates = environment_gates.overlaid(GateRequests.parse(args.feature_gates)).resolve()
    except FeatureGateError as e:
        raise SettingsError(f"invalid --feature-gates: {e}") from None
    try:
        if args.config:
            config = Configuration.from_yaml(_read(args.config))
        else:
            config = Configuration(
                metrics_addr=args.metrics_addr,
                probe_addr=args.health_probe_bind_address,
                enable_leader_election=args.enable_leader_election,
                leader_election_namespace=args.leader_election_namespace,
                reconcile_concurrency=args.reconcile_concurrency,
                watch_namespace=args.watch_namespace,
                log_file=args.log_file_path,
                log_file_encoder=args.log_file_encoder,
                log_stdout_encoder=args.log_stdout_encoder,
                enable_batch_scheduler=args.enable_batch_scheduler,
                batch_scheduler=args.batch_scheduler,
                use_kubernetes_proxy=args.use_kubernetes_proxy,
                # Upstream copies DELETE_RAYJOB_CR_AFTER_JOB_FINISHES into the flag-mode configuration.
                delete_ray_job_after_job_finishes=environment.rayjob.delete_after_job_finishes,
                enable_metrics=args.enable_metrics,
                qps=args.qps,
                burst=args.burst,
                allowed_node_labels=args.allowed_node_labels,
                node_event_forwarder_sources=args.node_event_forwarder_sources,
                node_event_forwarder_reasons=args.node_event_forwarder_reasons,
                node_event_forwarder_types=args.node_event_forwarder_types,
            )
        config.validate_batch_scheduler(gates)
    except ConfigError as e:
        source = f"config file {args.config}" if args.config else "flags"
        raise SettingsError(f"invalid {source}: {e}") from None
    if config.reconcile_concurrency < 1:
        raise SettingsError(
            f"invalid reconcile concurrency {config.reconcile_concurrency}: must be at least 1"
        )
    if config.qps <= 0 or config.burst < 1:
        raise SettingsError(
            f"invalid client rate limits qps={config.qps} burst={config.burst}: both must be positive"
        )
    leader_election = LeaderElectionSettings(
        lease_duration=args.leader_election_lease_duration,
        renew_deadline=args.leader_election_renew_deadline,
        retry_period=args.leader_election_retry_period,
    )
    if not leader_election.lease_duration > leader_election.renew_deadline > leader_election.retry_period:
        raise SettingsError("leader election needs lease-duration > renew-deadline > retry-period")
    return OperatorSettings(
        config=config,
        feature_gates=gates,
        environment=environment,
        leader_election=leader_election,
        runtime=RuntimeSettings(reconcile_timeout=args.reconcile_timeout),
        webhook=WebhookSettings(port=args.webhook_port, cert_dir=args.webhook_cert_dir),
        kubeconfig=args.kubeconfig or _kubeconfig_variable(environ),
        log_level=args.zap_log_level,
        config_file=args.config or None,
        forced_cluster_upgrade=args.forced_cluster_upgrade,
        fallbacks=tuple(fallbacks),
    )


def _kubeconfig_variable(environ: Mapping[str, str]) -> str | None:
    # controller-runtime's rule: KUBECONFIG's first path when `--kubeconfig` is not given.
    return environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise SettingsError(f"failed to read config file {path}: {e.strerror or e}") from None
