"""localkube: a Kubernetes-compatible control plane in one process. Knows nothing of Ray or kuberay."""

__version__ = "0.1.0"
