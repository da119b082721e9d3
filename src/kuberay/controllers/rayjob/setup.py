"""Installing the RayJob controller into a manager: settings from the operator's flags and environment, the
dashboard HTTP client, the job-status poller, the watches and the metrics.

Watches as upstream's: every change of a RayJob (status included), and the RayClusters, Services and batch
Jobs it controls. The poller's workers live exactly as long as the controller's workers (only the leader
polls), and the dashboard HTTP client is closed with them.

Operator environment, as upstream reads it: RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS, DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, ENABLE_LOGIN_SHELL, CLUSTER_DOMAIN,
ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE; and ours: RAYJOB_CLUSTER_START_TIMEOUT_SECONDS (seconds an attempt may
stay Initializing while its cluster is stuck; 0 or less waits forever, as upstream; default 300).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx

from kuberay.api import constants
from kuberay.api.config import Configuration
from kuberay.api.features import FeatureGates
from kuberay.controllers.rayjob.metrics import RayJobMetrics
from kuberay.controllers.rayjob.poller import JobStatusPoller
from kuberay.controllers.rayjob.reconciler import (
    RAYCLUSTER,
    RAYJOB,
    Caches,
    DashboardAccess,
    Options,
    RayJobReconciler,
)
from kuberay.controllers.rayjob.state import Settings
from kuberay.rayclient.dashboard import DIRECT_TIMEOUT, PROXY_TIMEOUT
from kuberay.runtime.client import api_server_http, load_config
from kuberay.runtime.controller import Controller
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import JOB, POD, SERVICE

# controller-runtime names an unnamed controller after its kind in lowercase (the `controller` label).
CONTROLLER_NAME = "rayjob"
CLUSTER_START_TIMEOUT_ENV = "RAYJOB_CLUSTER_START_TIMEOUT_SECONDS"
DEFAULT_CLUSTER_START_TIMEOUT = 300
POLLER_WORKERS = 8


@dataclass
class PollingController(Controller):
    """A controller that also runs its job-status poller, and closes the dashboard client when it stops."""

    poller: JobStatusPoller | None = None
    http: httpx.AsyncClient | None = field(default=None, repr=False)

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tasks:
                polling = tasks.create_task(self.poller.run()) if self.poller is not None else None
                await super().run()
                if polling is not None:
                    polling.cancel()
        finally:
            if self.http is not None:
                await self.http.aclose()


def _int_env(environ: Mapping[str, str], name: str, default: int, *, positive: bool) -> int:
    try:
        value = int(environ.get(name, ""))
    except ValueError:
        return default
    return default if positive and value <= 0 else value


def _true(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").lower() == "true"


def options_from(config: Configuration, gates: FeatureGates, environ: Mapping[str, str]) -> Options:
    """The controller's options: upstream's environment variables, parsed as upstream parses them."""
    start_timeout = _int_env(
        environ, CLUSTER_START_TIMEOUT_ENV, DEFAULT_CLUSTER_START_TIMEOUT, positive=False
    )
    machine = Settings(
        gates=gates,
        # Any integer is accepted for the grace period, even <= 0; only the status-check timeout must be > 0.
        transition_grace_period=_int_env(
            environ,
            constants.RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
            constants.DEFAULT_RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
            positive=False,
        ),
        status_check_timeout=_int_env(
            environ,
            constants.RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS,
            constants.DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS,
            positive=True,
        ),
        delete_rayjob_after_job_finishes=config.delete_ray_job_after_job_finishes
        or _true(environ, constants.DELETE_RAYJOB_CR_AFTER_JOB_FINISHES),
        cluster_start_timeout=float(start_timeout) if start_timeout > 0 else None,
    )
    return Options(
        settings=machine,
        cluster_domain=environ.get(constants.CLUSTER_DOMAIN) or constants.DEFAULT_CLUSTER_DOMAIN,
        login_shell=_true(environ, constants.ENABLE_LOGIN_SHELL),
        cluster_ip_head_service=_true(environ, constants.ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE),
    )


def dashboard_access(use_kubernetes_proxy: bool, kubeconfig: str | None) -> DashboardAccess:
    """Direct access with a 2 s timeout, or, with `--use-kubernetes-proxy`, the API server's service proxy with
    its address and credentials and a 10 s timeout."""
    if not use_kubernetes_proxy:
        return DashboardAccess(httpx.AsyncClient(timeout=DIRECT_TIMEOUT))
    kube = load_config(kubeconfig)
    http = api_server_http(kube, PROXY_TIMEOUT)
    return DashboardAccess(http, api_server=kube.cluster.server)


def install(
    manager: Manager,
    config: Configuration,
    gates: FeatureGates,
    *,
    kubeconfig: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> RayJobReconciler:
    """Adds the RayJob controller to `manager`; `kubeconfig` is only read with `--use-kubernetes-proxy`."""
    options = options_from(config, gates, os.environ if environ is None else environ)
    caches = Caches(
        rayjobs=manager.cache(RAYJOB),
        clusters=manager.cache(RAYCLUSTER),
        pods=manager.cache(POD),
        services=manager.cache(SERVICE),
        jobs=manager.cache(JOB),
    )
    access = dashboard_access(config.use_kubernetes_proxy, kubeconfig)
    poller = JobStatusPoller(access.http, workers=POLLER_WORKERS, clock=manager.clock)
    metrics = None
    if config.enable_metrics:
        metrics = RayJobMetrics(caches.rayjobs.list).register(manager.metrics.registry)
    reconciler = RayJobReconciler(
        manager.client,
        caches,
        poller,
        access,
        options,
        manager.clock,
        recorder=manager.recorder,
        metrics=metrics,
    )
    controller = PollingController(
        CONTROLLER_NAME,
        reconciler.reconcile,
        concurrency=config.reconcile_concurrency,
        clock=manager.clock,
        poller=poller,
        http=access.http,
    )
    poller.notify = controller.queue.add
    controller.for_(RAYJOB).owns(RAYCLUSTER).owns(SERVICE).owns(JOB)
    manager.add(controller)
    return reconciler
