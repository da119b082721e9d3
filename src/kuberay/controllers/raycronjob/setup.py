"""Installing the RayCronJob controller into a manager (only with the `RayCronJob` feature gate on).

It watches every change of a RayCronJob, status included, as upstream's controller does: its own status
write is what brings the pass for the next missed tick. It watches nothing else: the RayJobs it makes are
never read back.

The operator's local zone (`TZ`, else the machine's) is declared in `kuberay.api.settings` and resolved here,
once, at start-up.
"""

from __future__ import annotations

from datetime import UTC

from kuberay.api.features import Feature
from kuberay.api.settings import OperatorSettings
from kuberay.controllers.raycronjob import schedule
from kuberay.controllers.raycronjob.reconciler import Options, RayCronJobReconciler
from kuberay.rayresources import RAYCRONJOB
from kuberay.runtime.controller import Controller
from kuberay.runtime.manager import Manager

# controller-runtime names an unnamed controller by its lowercase kind; the Events keep upstream's
# reporting controller.
CONTROLLER_NAME = "raycronjob"
EVENT_SOURCE = "raycronjob-controller"


def enabled(settings: OperatorSettings) -> bool:
    return settings.feature_gates.enabled(Feature.RAY_CRON_JOB)


def options_from(settings: OperatorSettings) -> Options:
    """The controller's options, picked from the settings tree."""
    zone_name = settings.environment.raycronjob.local_time_zone
    local = schedule.system_zone() if zone_name == "Local" else schedule.zone_named(zone_name, UTC)
    return Options(gates=settings.feature_gates, local_zone=local)


def install(manager: Manager, settings: OperatorSettings) -> RayCronJobReconciler:
    """Adds the RayCronJob controller to `manager`."""
    recorder = manager.recorder.for_controller(EVENT_SOURCE) if manager.recorder is not None else None
    reconciler = RayCronJobReconciler(
        manager.client, manager.cache(RAYCRONJOB), options_from(settings), manager.clock, recorder
    )
    controller = Controller(
        CONTROLLER_NAME,
        reconciler.reconcile,
        concurrency=settings.config.reconcile_concurrency,
        clock=manager.clock,
        timeout=settings.runtime.reconcile_timeout,
    )
    manager.add(controller.for_(RAYCRONJOB))
    return reconciler
