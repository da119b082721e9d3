"""Controllers that run inside localkube: scheduling, garbage collection, namespaces, Jobs, workloads
(Deployments, ReplicaSets, StatefulSets, DaemonSets), endpoints."""
