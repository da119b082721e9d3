"""The root of the controllers' errors: `ReconcileError` (a `kuberay.errors.KubeRayError`), under which each
controller raises its own: RayCluster's `raycluster.dependents.DependentError`, `raycluster.podwrites.PodsError`,
`raycluster.status.StatusError` and `ReplicaFailureError`; RayJob's `rayjob.submitter.SubmitterInspectionError`;
RayService's `rayservice.serving.ServeUpdateError` (also a dashboard error); RayCronJob's
`raycronjob.schedule.NeverFires` (a ValueError). A reconcile that raises one fails and is retried with backoff,
as the runtime does with any error that is not `runtime.controller.TerminalError`."""

from kuberay.errors import KubeRayError


class ReconcileError(KubeRayError):
    """An error of a ray.io controller's pass."""
