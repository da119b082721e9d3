"""A RayService's RayClusters seen from the RayService: the spec hash, the cluster it builds, and the
in-place-update versus new-cluster decision (upstream `constructRayClusterForRayService`,
`shouldPrepareNewCluster`, `shouldUpdateCluster`, `isZeroDowntimeUpgradeEnabled`).

All pure functions of objects already read.

Invariants:
- The hash covers `rayClusterConfig` minus what neither needs a new cluster nor an update: `suspend`, the
  upgrade strategy, replicas and their bounds, `workersToDelete`, tolerations and scheduling gates (the
  Recreate hash of the RayCluster controller, plus `suspend`). Only this operator's own values are compared
  with it, so its JSON need not be Go's.
- "Partially equal" means the goal only appended worker groups to the ones the cluster was built with
  (its `ray.io/num-worker-groups` annotation): that is an in-place update, not a new cluster.
- A built cluster copies the RayService's labels and annotations, adds the origin labels, the hash, the
  worker-group count and the operator version, and is controlled by the RayService.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.features import FeatureGates
from kuberay.api.rayservice import RayService, RayServiceUpgradeType
from kuberay.builders import ownership
from kuberay.builders.service import is_incremental_upgrade
from kuberay.controllers.raycluster.recreate import spec_hash

JSON = dict[str, Any]


def goal_spec(service: RayService) -> JSON:
    """`rayClusterConfig` in wire form."""
    return service.spec.ray_cluster_config.dump()


def cluster_hash(spec: Mapping[str, Any]) -> str:
    muted = dict(spec)
    muted.pop("suspend", None)
    return spec_hash(muted)


def _annotations(cluster: Mapping[str, Any]) -> Mapping[str, str]:
    return (cluster.get("metadata") or {}).get("annotations") or {}


def full_hash_equal(cluster: Mapping[str, Any], goal: Mapping[str, Any]) -> bool:
    stamped = _annotations(cluster).get(constants.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION)
    return stamped == cluster_hash(goal)


def partial_hash_equal(cluster: Mapping[str, Any], goal: Mapping[str, Any]) -> bool:
    """The goal is the cluster's spec with worker groups appended (or the same spec)."""
    try:
        groups = int(_annotations(cluster).get(constants.NUM_WORKER_GROUPS_ANNOTATION, ""))
    except ValueError:
        return True  # upstream: an unreadable count means "equal"
    goal_groups = list(goal.get("workerGroupSpecs") or [])
    if len(goal_groups) < groups:
        return False
    prefix = {**goal, "workerGroupSpecs": goal_groups[:groups]}
    stamped = _annotations(cluster).get(constants.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION)
    return stamped == cluster_hash(prefix)


def should_update_in_place(cluster: Mapping[str, Any], goal: Mapping[str, Any]) -> bool:
    return not full_hash_equal(cluster, goal) and partial_hash_equal(cluster, goal)


def should_prepare_new_cluster(
    active: Mapping[str, Any] | None,
    pending: Mapping[str, Any] | None,
    goal: Mapping[str, Any],
    *,
    new_on_change: bool,
) -> bool:
    """Whether a new pending cluster is due: none exists yet, or the goal differs from the newest cluster
    beyond appended worker groups and a changed spec makes a new cluster (`new_on_change`, from
    `zero_downtime_enabled`). The caller rules out the times none is made (a rollback, a pending cluster
    that already serves)."""
    if active is None and pending is None:
        return True
    reference = pending if pending is not None else active
    assert reference is not None
    if full_hash_equal(reference, goal) or partial_hash_equal(reference, goal):
        return False
    return new_on_change


def stale_operator_version(cluster: Mapping[str, Any]) -> bool:
    return _annotations(cluster).get(constants.KUBERAY_VERSION_ANNOTATION) != constants.KUBERAY_VERSION


def zero_downtime_enabled(service: RayService, gates: FeatureGates, zero_downtime: bool) -> bool:
    """Whether a changed cluster spec makes a new cluster (otherwise it is ignored); `zero_downtime` is
    ENABLE_ZERO_DOWNTIME, which only counts without `upgradeStrategy.type`."""
    strategy = service.spec.upgrade_strategy
    if strategy is not None and strategy.type is not None:
        if is_incremental_upgrade(service, gates):
            return True
        return strategy.type == RayServiceUpgradeType.NEW_CLUSTER
    return zero_downtime


def build_cluster(service: RayService, name: str, gates: FeatureGates, *, active_exists: bool) -> JSON:
    """The RayCluster `name` of a RayService (its suspend flag included: it is only copied at creation)."""
    spec = copy.deepcopy(goal_spec(service))
    if is_incremental_upgrade(service, gates) and active_exists:
        # The new cluster starts small; the autoscaler grows it as Serve moves capacity over.
        for group in spec.get("workerGroupSpecs") or ():
            group.pop("replicas", None)
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": service.namespace,
            "labels": stamped_labels(service),
            "annotations": stamped_annotations(service),
            "ownerReferences": ownership.controlled_by(service),
        },
        "spec": spec,
    }


def stamped_labels(service: RayService) -> dict[str, str]:
    return {
        **service.labels,
        constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: service.name,
        constants.RAY_ORIGINATED_FROM_CRD_LABEL: constants.RAY_SERVICE_CRD,
    }


def stamped_annotations(service: RayService) -> dict[str, str]:
    goal = goal_spec(service)
    return {
        **service.annotations,
        constants.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION: cluster_hash(goal),
        constants.NUM_WORKER_GROUPS_ANNOTATION: str(len(goal.get("workerGroupSpecs") or [])),
        constants.KUBERAY_VERSION_ANNOTATION: constants.KUBERAY_VERSION,
    }


def updated_in_place(existing: Mapping[str, Any], service: RayService, gates: FeatureGates) -> JSON:
    """The existing cluster with the goal spec (keeping its `suspend`, which Kueue may own) and the
    RayService's labels and annotations."""
    built = build_cluster(service, existing["metadata"]["name"], gates, active_exists=False)
    updated = copy.deepcopy(dict(existing))
    spec = built["spec"]
    spec.pop("suspend", None)
    if "suspend" in (existing.get("spec") or {}):
        spec["suspend"] = existing["spec"]["suspend"]
    updated["spec"] = spec
    updated["metadata"]["labels"] = built["metadata"]["labels"]
    updated["metadata"]["annotations"] = built["metadata"]["annotations"]
    return updated
