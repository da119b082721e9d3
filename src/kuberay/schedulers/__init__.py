"""Batch-scheduler plugins (upstream's `batchscheduler` package): Volcano, YuniKorn, scheduler-plugins, KAI and
Kubernetes workload-aware scheduling behind one interface (`interface.BatchScheduler`), chosen operator-wide by
`manager.new_scheduler` from `--batch-scheduler`, `--enable-batch-scheduler` and the `KubernetesWAS` gate.

The RayCluster and RayJob controllers call the chosen plugin at upstream's call sites; the plugins write
their foreign objects (PodGroups, Workloads) through the runtime client and stamp pods with labels,
annotations and `spec.schedulerName`.
"""
