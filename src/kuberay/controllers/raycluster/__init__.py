"""The RayCluster controller: `setup.install` puts it into a manager; `reconciler` is the chain of named
steps. By concept: `dependents` the owned objects other than pods, `finalizer` GCS FT cleanup on deletion,
`pods` the pods step (`multihost` for multi-host groups, `podwrites` its creates and deletes, `podstate` what
a pod's state means), `replicas` the replica arithmetic, `status` the pure status calculation (`conditions`
its condition rules, `resources` the desired resources), `recreate` the upgrade hash, `metrics` upstream's
`RayClusterMetricsManager`."""
