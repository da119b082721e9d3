"""The root of the `kubectl ray` plugin's errors: `KubectlPluginError` (a `kuberay.errors.KubeRayError`), under
which `kube.PluginError` (what a command failed with, printed whole), `kube.TargetError` and
`generation.ClusterConfigError` (both ValueErrors, worded as upstream's)."""

from kuberay.errors import KubeRayError


class KubectlPluginError(KubeRayError):
    """An error of the `kubectl ray` plugin."""
