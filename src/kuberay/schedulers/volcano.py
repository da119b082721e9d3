"""Volcano (`volcano`, upstream's `VolcanoBatchScheduler`): one `scheduling.volcano.sh/v1beta1` PodGroup per RayCluster,
or per RayJob (its cluster and submitter join the job's group), named `ray-<name>-pg`.

The PodGroup is created with its queue, priority class and network topology from the owner's labels and
afterwards only resized (`minMember`, `minResources`). A RayJob's group does not count the submitter in
`minMember` (the submitter waits for the cluster; a gang waiting for the submitter would never start) but
reserves its resources. When a RayJob completes, its group is resized to what is left of its cluster
(nothing once the cluster is gone), so the queue's capacity is given back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.builders import ownership
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import Resource
from kuberay.schedulers import sizing
from kuberay.schedulers.interface import (
    BatchScheduler,
    BatchSchedulingError,
    Obj,
    add_annotations,
    annotations_of,
    copy_label,
    kind_of,
    labels_of,
    name_of,
    namespace_of,
    set_scheduler_name,
)
from kuberay.schedulers.served import ServedKinds
from kubesemantics import quantity

PODGROUP = Resource("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups")
QUEUE_LABEL = "volcano.sh/queue-name"
NETWORK_TOPOLOGY_MODE_LABEL = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_TIER_LABEL = "volcano.sh/network-topology-highest-tier-allowed"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"


def podgroup_name(obj: Obj) -> str:
    """`ray-<name>-pg`; a RayJob's cluster (and its pods) name the RayJob's group."""
    labels = labels_of(obj)
    name = name_of(obj)
    if labels.get(constants.RAY_ORIGINATED_FROM_CRD_LABEL) == constants.RAY_JOB_CRD:
        name = labels.get(constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL) or name
    return f"ray-{name}-pg"


def build_podgroup(owner: Obj, min_member: int, min_resources: sizing.ResourceList) -> dict[str, Any]:
    """The PodGroup created for `owner` (a RayCluster or a RayJob)."""
    name, namespace, labels = podgroup_name(owner), namespace_of(owner), labels_of(owner)
    metadata = owner.get("metadata") or {}
    spec: dict[str, Any] = {"minMember": min_member, "minResources": min_resources}
    if NETWORK_TOPOLOGY_MODE_LABEL in labels:
        topology: dict[str, Any] = {"mode": labels[NETWORK_TOPOLOGY_MODE_LABEL]}
        if NETWORK_TOPOLOGY_TIER_LABEL in labels:
            tier = labels[NETWORK_TOPOLOGY_TIER_LABEL]
            try:
                topology["highestTierAllowed"] = int(tier)
            except ValueError as e:
                raise BatchSchedulingError(
                    f"failed to convert {NETWORK_TOPOLOGY_TIER_LABEL} label to int: strconv.Atoi: "
                    f'parsing "{tier}": invalid syntax for podgroup {name} in namespace {namespace}'
                ) from e
        spec["networkTopology"] = topology
    if QUEUE_LABEL in labels:
        spec["queue"] = labels[QUEUE_LABEL]
    if constants.RAY_PRIORITY_CLASS_NAME_LABEL in labels:
        spec["priorityClassName"] = labels[constants.RAY_PRIORITY_CLASS_NAME_LABEL]
    return {
        "apiVersion": PODGROUP.api_version,
        "kind": PODGROUP.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": annotations_of(owner),
            "ownerReferences": [
                ownership.controller_reference(
                    str(owner.get("apiVersion") or constants.API_VERSION),
                    kind_of(owner),
                    name_of(owner),
                    str(metadata.get("uid") or ""),
                )
            ],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _same_resources(have: Mapping[str, Any] | None, want: sizing.ResourceList) -> bool:
    if have is None or set(have) != set(want):
        return False
    return all(quantity.parse(have[name]) == quantity.parse(want[name]) for name in want)


class Volcano(BatchScheduler):
    name = "volcano"

    def __init__(self, client: Client, served: ServedKinds) -> None:
        self._client = client
        self._served = served

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        kind = kind_of(obj)
        if kind == "RayCluster":
            if labels_of(obj).get(constants.RAY_ORIGINATED_FROM_CRD_LABEL) == constants.RAY_JOB_CRD:
                return  # the RayJob's group covers its cluster
            await self._sync(obj, *sizing.gang_size(obj.get("spec") or {}))
        elif kind == "RayJob":
            spec = obj.get("spec") or {}
            if spec.get("rayClusterSpec") is None:
                raise BatchSchedulingError(
                    f"gang scheduling does not support RayJob {namespace_of(obj)}/{name_of(obj)} "
                    "referencing an existing RayCluster"
                )
            size, resources = sizing.gang_size(spec["rayClusterSpec"])
            await self._sync(obj, size, sizing.sum_resources([resources, sizing.submitter_resources(spec)]))
        else:
            raise BatchSchedulingError(
                f"unsupported object type {kind}, only RayCluster and RayJob are supported"
            )

    def add_metadata_to_child_resource(self, parent: Obj, child: dict[str, Any], group_name: str) -> None:
        copy_label(parent, child, QUEUE_LABEL)
        copy_label(parent, child, constants.RAY_PRIORITY_CLASS_NAME_LABEL)
        add_annotations(
            child, {GROUP_NAME_ANNOTATION: podgroup_name(parent), TASK_SPEC_ANNOTATION: group_name}
        )
        set_scheduler_name(child, self.name)

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        if kind_of(obj) != "RayJob":
            return False  # a RayCluster's group goes with it (owner reference)
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        cluster_name = status.get("rayClusterName") or ""
        if spec.get("clusterSelector") or not cluster_name:
            return False
        size, resources = 0, sizing.ResourceList()
        try:
            cluster = await self._client.get(RAYCLUSTER, cluster_name, namespace_of(obj))
        except errors.NotFoundError:
            cluster = None
        if cluster is not None and not cluster["metadata"].get("deletionTimestamp"):
            size, resources = sizing.gang_size(cluster.get("spec") or {})
        return await self._sync(obj, size, resources)

    async def _sync(self, owner: Obj, size: int, resources: sizing.ResourceList) -> bool:
        """Creates the group or resizes it; True when it wrote."""
        namespace = namespace_of(owner)
        if not await self._served.served(PODGROUP, namespace):
            self._served.report_missing(PODGROUP, self.name, owner)
            return False
        try:
            live = await self._client.get(PODGROUP, podgroup_name(owner), namespace)
        except errors.NotFoundError:
            try:
                await self._client.create(PODGROUP, build_podgroup(owner, size, resources), namespace)
            except errors.AlreadyExistsError:
                return False
            return True
        live_spec = live.setdefault("spec", {})
        if live_spec.get("minMember", 0) == size and _same_resources(
            live_spec.get("minResources"), resources
        ):
            return False
        live_spec["minMember"] = size
        live_spec["minResources"] = resources
        await self._client.update(PODGROUP, live)
        return True
