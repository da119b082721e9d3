"""The root of `kuberay local`'s errors: `LocalModeError` (a `kuberay.errors.KubeRayError`), under which
`launcher.LocalError` (the local cluster could not be started), `instance.InstanceError` with
`instance.AlreadyRunning` (the data directory's lock and state) and `monitoring.MonitoringError` (Prometheus)."""

from kuberay.errors import KubeRayError


class LocalModeError(KubeRayError):
    """An error of `kuberay local`."""
