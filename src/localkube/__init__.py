"""localkube: a Kubernetes-compatible control plane in one process. Knows nothing of Ray or kuberay.

Its errors: one root per package under `errors.LocalkubeError` (the scheme is in `localkube.errors`)."""

from importlib.metadata import version

# The one version source is pyproject.toml; both packages ship in the `kuberay` distribution.
__version__ = version("kuberay")
