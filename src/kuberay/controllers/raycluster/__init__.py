"""The RayCluster controller: `setup.install` puts it into a manager; `reconciler` is the chain, `pods`
the pod arithmetic, `status` the pure status calculation, `dependents` the other owned objects,
`finalizer` GCS FT cleanup on deletion, `recreate` the upgrade hash, `metrics` spec §7's metrics."""
