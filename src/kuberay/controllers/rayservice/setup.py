"""Installing the RayService controller into a manager: options from the operator's flags and environment,
the dashboard HTTP client, the watches and the metrics.

Watches as upstream's: RayService changes of generation, labels or annotations (not status-only writes),
and the RayClusters and Services it controls. EndpointSlices are cached (for `numServeEndpoints`), not
watched: the 2 s requeue reads them.

The environment variables it depends on (ENABLE_ZERO_DOWNTIME, RAYSERVICE_UPGRADE_TIMEOUT_SECONDS,
CLUSTER_DOMAIN, ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE) are declared and parsed in `kuberay.api.settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from kuberay.api.settings import OperatorSettings
from kuberay.controllers.dashboards import dashboard_access
from kuberay.controllers.raycluster.setup import spec_or_metadata_changed
from kuberay.controllers.rayservice.context import ENDPOINT_SLICE, Caches, Options
from kuberay.controllers.rayservice.metrics import RayServiceMetrics
from kuberay.controllers.rayservice.reconciler import RayServiceReconciler
from kuberay.rayresources import RAYCLUSTER, RAYSERVICE
from kuberay.runtime.controller import Controller
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import POD, SERVICE

# controller-runtime names an unnamed controller by its lowercase kind (metrics and logs); the Events keep
# upstream's reporting controller.
CONTROLLER_NAME = "rayservice"
EVENT_SOURCE = "rayservice-controller"


@dataclass
class ClientOwningController(Controller):
    """A controller that closes its dashboard HTTP client when it stops."""

    http: httpx.AsyncClient | None = field(default=None, repr=False)

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            if self.http is not None:
                await self.http.aclose()


def options_from(settings: OperatorSettings) -> Options:
    """The controller's options, picked from the settings tree."""
    env = settings.environment
    return Options(
        gates=settings.feature_gates,
        cluster_domain=env.pods.cluster_domain,
        zero_downtime=env.rayservice.zero_downtime,
        cluster_ip_head_service=env.pods.cluster_ip_head_service,
        upgrade_timeout=env.rayservice.upgrade_timeout,
    )


def install(manager: Manager, settings: OperatorSettings) -> RayServiceReconciler:
    """Adds the RayService controller to `manager`; the kubeconfig is only read with `--use-kubernetes-proxy`."""
    config = settings.config
    options = options_from(settings)
    caches = Caches(
        rayservices=manager.cache(RAYSERVICE),
        clusters=manager.cache(RAYCLUSTER),
        pods=manager.cache(POD),
        services=manager.cache(SERVICE),
        slices=manager.cache(ENDPOINT_SLICE),
    )
    access = dashboard_access(config.use_kubernetes_proxy, settings.kubeconfig)
    recorder = manager.recorder.for_controller(EVENT_SOURCE) if manager.recorder is not None else None
    reconciler = RayServiceReconciler(
        manager.client, caches, access, options, manager.clock, recorder=recorder
    )
    if config.enable_metrics:
        RayServiceMetrics(caches.rayservices.list).register(manager.metrics.registry)
    controller = ClientOwningController(
        CONTROLLER_NAME,
        reconciler.reconcile,
        concurrency=config.reconcile_concurrency,
        clock=manager.clock,
        timeout=settings.runtime.reconcile_timeout,
        http=access.http,
    )
    controller.for_(RAYSERVICE, spec_or_metadata_changed).owns(RAYCLUSTER).owns(SERVICE)
    manager.add(controller)
    return reconciler
