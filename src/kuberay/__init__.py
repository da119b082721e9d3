"""kuberay: KubeRay, the Kubernetes operator for Ray, in Python."""

__version__ = "0.1.0"
