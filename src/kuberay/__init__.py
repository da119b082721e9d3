"""kuberay: KubeRay, the Kubernetes operator for Ray, in Python.

Its errors: one root per package under `errors.KubeRayError` (the scheme is in `kuberay.errors`)."""


def __getattr__(name: str) -> str:
    # `__version__` is looked up on first use: importlib.metadata costs tens of milliseconds, which every
    # `kuberay` command (shell completion too) and the operator would otherwise pay at start-up.
    if name == "__version__":
        from importlib.metadata import version

        # The one version source is pyproject.toml; both packages ship in the `kuberay` distribution.
        return version("kuberay")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
