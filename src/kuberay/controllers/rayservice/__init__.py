"""The RayService controller: RayClusters behind stable Services, Serve applications, zero-downtime upgrades.

- `context`: what a pass shares (the controller's `Context` and its Serve config cache, one reconcile's
  `Pass`) and its delete helper;
- `clusters`: the spec hash, the RayCluster a RayService builds, in-place update versus new cluster;
- `serving`: Serve applications on one cluster (read, submit) and the head pod's serve label;
- `suspend`: suspending (deleting what it owns) and resuming;
- `incremental`: the incremental upgrade's decisions; `gateway`: its writes (Gateway, HTTPRoute, capacity);
- `status`: the status from a pass's facts (promotion, endpoints, conditions), and whether it changed;
- `reconciler`: one pass in upstream's order and the clusters' life cycle; `metrics`: the kuberay_service_*
  metrics; `setup`: installing it.
"""
