"""Choosing the one batch scheduler of the operator (upstream's `NewSchedulerManager` and `getSchedulerFactory`):
the `KubernetesWAS` gate first, then `--batch-scheduler` by name (none: the no-op default), then the deprecated
`--enable-batch-scheduler`, which forces Volcano. The flags' combinations were checked at start-up
(`Configuration.validate_batch_scheduler`); `check_served` is the start-up check that needs the API server.
"""

from __future__ import annotations

from kuberay.api.features import Feature
from kuberay.api.settings import OperatorSettings
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.events import Recorder
from kuberay.schedulers import kubernetes_was
from kuberay.schedulers.errors import SchedulerPluginError
from kuberay.schedulers.interface import BatchScheduler
from kuberay.schedulers.kai import Kai
from kuberay.schedulers.schedulerplugins import SchedulerPlugins
from kuberay.schedulers.served import ServedKinds
from kuberay.schedulers.volcano import Volcano
from kuberay.schedulers.yunikorn import YuniKorn


class SchedulerSetupError(SchedulerPluginError):
    """The chosen scheduler cannot run against this API server (the operator does not start)."""


def configured(settings: OperatorSettings) -> bool:
    """Whether a batch scheduler other than the no-op default is chosen."""
    config = settings.config
    return bool(
        config.batch_scheduler
        or config.enable_batch_scheduler
        or settings.feature_gates.enabled(Feature.KUBERNETES_WAS)
    )


def new_scheduler(
    settings: OperatorSettings, client: Client, clock: Clock, recorder: Recorder | None = None
) -> BatchScheduler:
    """The operator's scheduler plugin; `recorder` receives the missing-CRD Warnings."""
    if settings.feature_gates.enabled(Feature.KUBERNETES_WAS):
        return kubernetes_was.KubernetesWAS(client)
    config = settings.config
    name = "volcano" if config.enable_batch_scheduler else config.batch_scheduler
    served = ServedKinds(client, clock, recorder)
    if name == "volcano":
        return Volcano(client, served)
    if name == "yunikorn":
        return YuniKorn()
    if name == "kai-scheduler":
        return Kai()
    if name == "scheduler-plugins":
        return SchedulerPlugins(client, served)
    if name:
        raise SchedulerSetupError(f"the scheduler is not supported, name={name}")
    return BatchScheduler()


async def check_served(settings: OperatorSettings, client: Client) -> None:
    """With `KubernetesWAS` on, the API server must serve `scheduling.k8s.io/v1alpha2` (upstream's
    discovery check at start-up)."""
    if not settings.feature_gates.enabled(Feature.KUBERNETES_WAS):
        return
    try:
        await client.list(kubernetes_was.WORKLOAD, "default", limit=1)
    except errors.Forbidden:
        return
    except errors.KubeError as e:
        raise SchedulerSetupError(
            f"no served scheduling.k8s.io API version available for {kubernetes_was.PLUGIN_NAME}: "
            f"[{kubernetes_was.GROUP_VERSION}: the server could not find the requested resource ({e})]"
        ) from e
