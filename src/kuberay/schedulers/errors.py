"""The root of the batch-scheduler plugins' errors: `SchedulerPluginError` (a `kuberay.errors.KubeRayError`),
under which `interface.BatchSchedulingError` (a plugin cannot do what a reconcile asks; the reconcile fails
and is retried) and `manager.SchedulerSetupError` (the chosen scheduler cannot run; the operator does not
start)."""

from kuberay.errors import KubeRayError


class SchedulerPluginError(KubeRayError):
    """An error of a batch-scheduler plugin or of choosing one."""
