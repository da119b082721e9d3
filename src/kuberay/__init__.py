"""kuberay: KubeRay, the Kubernetes operator for Ray, in Python."""

from importlib.metadata import version

# The one version source is pyproject.toml; both packages ship in the `kuberay` distribution.
__version__ = version("kuberay")
