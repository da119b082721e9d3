"""`kuberay-operator`: settings → logging → client → manager with controllers → metrics and probe endpoints,
and the admission webhooks when ENABLE_WEBHOOKS is `true`.

Exit status: 0 after a graceful stop (SIGTERM or SIGINT), 1 when the process cannot run (no Kubernetes
configuration, a port in use) or lost its leader lease, 2 for a bad flag, config file or feature gate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry, disable_created_metrics
from prometheus_client.exposition import choose_encoder

from kuberay.api.settings import OperatorSettings
from kuberay.operator import logs, nodelabels, settings, webhooks
from kuberay.operator.registry import BUILTIN, CACHE_SELECTORS, ControllerSetup
from kuberay.operator.settings import SettingsError
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import heap
from kuberay.runtime.client import Client, ConfigurationError, load_config
from kuberay.runtime.clock import SystemClock
from kuberay.runtime.events import EventRecorder
from kuberay.runtime.leaderelection import (
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    default_identity,
)
from kuberay.runtime.manager import Manager
from kuberay.runtime.metrics import RestClientMetrics, RuntimeMetrics, observe_leader, process_collectors
from kuberay.runtime.serving import EndpointServer, HttpRequest, Route, parse_bind_address
from kuberay.schedulers import manager as schedulers

log = logging.getLogger("setup")

USER_AGENT = "kuberay-operator/nightly"
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def main() -> None:
    """The console script."""
    sys.exit(run(sys.argv[1:], BUILTIN))


def run(argv: Sequence[str], controllers: Sequence[ControllerSetup]) -> int:
    try:
        operator_settings = settings.parse(argv)
    except SettingsError as e:
        print(f"kuberay-operator: {e}", file=sys.stderr)
        return 2
    config = operator_settings.config
    try:
        logs.configure(
            stdout_encoder=config.log_stdout_encoder or "json",
            level=operator_settings.log_level,
            file_path=config.log_file,
            file_encoder=config.log_file_encoder or "json",
        )
    except OSError as e:
        print(f"kuberay-operator: cannot open log file {config.log_file}: {e.strerror or e}", file=sys.stderr)
        return 1
    # Go's client exposes no `_created` series; keep the exposition the same shape.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    # Before serving: large buffers on the C heap fragment it for the life of the process (`heap`).
    heap.pin_thresholds()
    try:
        return asyncio.run(serve(operator_settings, controllers))
    except (ConfigurationError, OSError) as e:
        log.error("unable to start manager: %s", e)
        return 1


async def serve(operator_settings: OperatorSettings, controllers: Sequence[ControllerSetup]) -> int:
    config = operator_settings.config
    if operator_settings.forced_cluster_upgrade:
        log.info("Deprecated feature flag forced-cluster-upgrade is enabled, which has no effect.")
    for fallback in operator_settings.fallbacks:
        log.warning("%s", fallback)
    log.info("feature gates: %s", operator_settings.feature_gates.describe())
    for warning in operator_settings.feature_gates.warnings():
        log.info("%s", warning)
    if config.enable_batch_scheduler:
        log.info(
            "Feature flag enable-batch-scheduler is deprecated and will not be supported soon. "
            "Use batch-scheduler instead. "
        )
    elif config.batch_scheduler:
        log.info("Feature flag batch-scheduler is enabled (scheduler name %s)", config.batch_scheduler)
    kube = load_config(operator_settings.kubeconfig)
    clock = SystemClock()
    registry = CollectorRegistry()
    process_collectors(registry)
    client = Client.from_config(
        kube,
        user_agent=USER_AGENT,
        qps=config.qps,
        burst=config.burst,
        clock=clock,
        metrics=RestClientMetrics(registry),
    )
    identity = default_identity()
    elector = None
    if config.enable_leader_election:
        namespace = config.leader_election_namespace or _own_namespace(kube.namespace)
        lease = LeaderElectionConfig(
            namespace=namespace,
            identity=identity,
            lease_duration=operator_settings.leader_election.lease_duration,
            renew_deadline=operator_settings.leader_election.renew_deadline,
            retry_period=operator_settings.leader_election.retry_period,
        )
        elector = LeaderElector(client, lease, clock)
        observe_leader(registry, lease.name, lambda: elector is not None and elector.leading)
    try:
        await schedulers.check_served(operator_settings, client)
    except schedulers.SchedulerSetupError as e:
        log.error("unable to create batch scheduler manager: %s", e)
        await client.close()
        return 1
    # Everything but the elector writes through a client fenced on the lease: a replica resumed after a
    # pause past its lease refuses the writes it had under way rather than race its successor.
    writer = client if elector is None else client.fenced(elector.holds)
    namespaces = operator_settings.watch_namespaces
    log.info("watching %s", f"namespaces {namespaces}" if namespaces else "all namespaces")
    manager = Manager(
        writer,
        RuntimeMetrics(registry),
        namespaces=namespaces,
        selectors=CACHE_SELECTORS,
        elector=elector,
        recorder=EventRecorder(writer, component="kuberay-operator", instance=identity, clock=clock),
        clock=clock,
    )
    for setup in controllers:
        if setup.enabled(operator_settings):
            log.info("setting up controller %s", setup.name)
            setup.install(manager, operator_settings)

    def metrics(request: HttpRequest) -> tuple[int, str, bytes]:
        # The text format, or OpenMetrics when the scraper asks for it (as Prometheus does).
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return 200, content_type, encode(registry)

    def healthz(_: HttpRequest) -> tuple[int, str, bytes]:
        return 200, "text/plain; charset=utf-8", b"ok"

    def readyz(_: HttpRequest) -> tuple[int, str, bytes]:
        return (
            (200, "text/plain; charset=utf-8", b"ok")
            if manager.ready
            else (500, "text/plain", b"caches not synced\n")
        )

    servers = [
        await _start(config.metrics_addr, {"/metrics": metrics}, "metrics"),
        await _start(config.probe_addr, {"/healthz": healthz, "/readyz": readyz}, "health probe"),
    ]
    if operator_settings.environment.webhook.enabled:
        delivery = nodelabels.NodeLabelDelivery(
            client, manager.cache(RAYCLUSTER), manager.recorder, operator_settings.config.allowed_node_labels
        )
        servers.append(
            await webhooks.start(
                operator_settings.webhook, delivery.routes(), operator_settings.config.allowed_node_labels
            )
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await manager.run(stop)
        log.info("stopped")
        return 0
    except LeadershipLost as e:
        log.error("leader election lost: %s", e)
        return 1
    finally:
        for server in servers:
            if server is not None:
                await server.close()
        await client.close()


async def _start(address: str, routes: dict[str, Route], what: str) -> EndpointServer | None:
    try:
        bind = parse_bind_address(address)
    except ValueError as e:
        raise OSError(f"{what} server: {e}") from None
    if bind is None:
        log.info("%s server disabled", what)
        return None
    server = EndpointServer(routes)
    await server.start(*bind)
    log.info("%s server listening on %s:%d", what, bind[0], server.port)
    return server


def _own_namespace(context_namespace: str) -> str:
    """The pod's namespace in a cluster; outside one, the kubeconfig context's namespace."""
    with contextlib.suppress(OSError):
        return IN_CLUSTER_NAMESPACE.read_text().strip()
    return context_namespace


if __name__ == "__main__":
    main()
