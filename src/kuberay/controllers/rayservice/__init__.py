"""The RayService controller: RayClusters behind stable Services, Serve applications, zero-downtime upgrades.

- `clusters`: the spec hash, the RayCluster a RayService builds, in-place update versus new cluster;
- `serving`: Serve applications on one cluster (read, submit) and the submitted-config cache;
- `status`: promotion, endpoints, conditions, and whether the status changed;
- `reconciler`: one pass in upstream's order; `metrics`: the kuberay_service_* metrics; `setup`: installing it.
"""
