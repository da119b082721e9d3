"""The reconcilers: RayCluster, RayJob, NetworkPolicy (more to come)."""
