"""Installing the RayJob controller into a manager: its options from the operator's settings tree, the
dashboard HTTP client, the job-status poller, the watches and the metrics.

Watches as upstream's: every change of a RayJob (status included), and the RayClusters, Services and batch
Jobs it controls. The poller's workers live exactly as long as the controller's workers (only the leader
polls), and the dashboard HTTP client is closed with them.

The environment variables it depends on (RAYJOB_*, DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, ENABLE_LOGIN_SHELL,
CLUSTER_DOMAIN, ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE) are declared and parsed in `kuberay.api.settings`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx

from kuberay.api.settings import OperatorSettings
from kuberay.controllers.dashboards import dashboard_access
from kuberay.controllers.rayjob.decision import Settings
from kuberay.controllers.rayjob.metrics import RayJobMetrics
from kuberay.controllers.rayjob.poller import JobStatusPoller
from kuberay.controllers.rayjob.reconciler import Caches, Options, RayJobReconciler
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime.controller import Controller
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import JOB, POD, SERVICE
from kuberay.schedulers import manager as schedulers

# controller-runtime names an unnamed controller after its kind in lowercase (the `controller` label).
CONTROLLER_NAME = "rayjob"
EVENT_SOURCE = "rayjob-controller"  # upstream's reporting controller of the RayJob's events.k8s.io/v1 Events
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


def options_from(settings: OperatorSettings) -> Options:
    """The controller's options, picked from the settings tree."""
    env = settings.environment
    machine = Settings(
        gates=settings.feature_gates,
        transition_grace_period=env.rayjob.transition_grace_period,
        status_check_timeout=env.rayjob.status_check_timeout,
        delete_rayjob_after_job_finishes=settings.delete_rayjob_after_job_finishes,
        cluster_start_timeout=env.rayjob.cluster_start_timeout,
        batch_scheduler=schedulers.configured(settings),
    )
    return Options(
        settings=machine,
        cluster_domain=env.pods.cluster_domain,
        login_shell=env.pods.login_shell,
        cluster_ip_head_service=env.pods.cluster_ip_head_service,
    )


def install(manager: Manager, settings: OperatorSettings) -> RayJobReconciler:
    """Adds the RayJob controller to `manager`; the kubeconfig is only read with `--use-kubernetes-proxy`."""
    config = settings.config
    options = options_from(settings)
    caches = Caches(
        rayjobs=manager.cache(RAYJOB),
        clusters=manager.cache(RAYCLUSTER),
        pods=manager.cache(POD),
        services=manager.cache(SERVICE),
        jobs=manager.cache(JOB),
    )
    access = dashboard_access(config.use_kubernetes_proxy, settings.kubeconfig)
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
        recorder=manager.recorder.for_controller(EVENT_SOURCE) if manager.recorder is not None else None,
        metrics=metrics,
        scheduler=schedulers.new_scheduler(settings, manager.client, manager.clock, manager.recorder),
    )
    controller = PollingController(
        CONTROLLER_NAME,
        reconciler.reconcile,
        concurrency=config.reconcile_concurrency,
        clock=manager.clock,
        timeout=settings.runtime.reconcile_timeout,
        poller=poller,
        http=access.http,
    )
    poller.notify = controller.queue.add
    controller.for_(RAYJOB).owns(RAYCLUSTER).owns(SERVICE).owns(JOB)
    manager.add(controller)
    return reconciler
