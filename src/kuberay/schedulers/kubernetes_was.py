"""Kubernetes workload-aware scheduling (gate `KubernetesWAS`, plugin `kubernetes-was-v1alpha2`; upstream's
`kubernetes-was` package and its v1alpha2 provider): a `scheduling.k8s.io/v1alpha2` Workload named as the
RayCluster and its PodGroup `<cluster>-cluster`, both controlled by the cluster, gang size 1 + desired workers;
pods stay with `default-scheduler` and name their group in `spec.schedulingGroup`.

Only RayClusters that ask for it (label `ray.io/gang-scheduling-enabled` equal to `true`, any case) and do not
autoscale are covered; for the others, objects left from before are deleted. The objects are immutable:
a stale one is deleted (its PodGroup's protection finalizer removed first, deletes with a UID precondition)
and the reconcile fails so that a later one makes it afresh. Same-named objects another owner controls are a
name collision, reported as an error.
"""

from __future__ import annotations

import logging
from typing import Any

from kuberay.api import constants
from kuberay.builders import ownership
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import Resource
from kuberay.schedulers import sizing
from kuberay.schedulers.interface import (
    BatchScheduler,
    BatchSchedulingError,
    Obj,
    is_pod_like,
    kind_of,
    labels_of,
    name_of,
    namespace_of,
    set_scheduler_name,
)

log = logging.getLogger(__name__)

GROUP_VERSION = "scheduling.k8s.io/v1alpha2"
WORKLOAD = Resource(GROUP_VERSION, "Workload", "workloads")
PODGROUP = Resource(GROUP_VERSION, "PodGroup", "podgroups")
PLUGIN_NAME = "kubernetes-was-v1alpha2"
TEMPLATE_NAME = "cluster"
PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
DEFAULT_SCHEDULER = "default-scheduler"


def skip_reason(cluster: Obj) -> str:
    if labels_of(cluster).get(constants.RAY_GANG_SCHEDULING_ENABLED_LABEL, "").lower() != "true":
        return "gang scheduling not enabled on RayCluster"
    if sizing.autoscaling(cluster.get("spec") or {}):
        return "autoscaling is not yet supported"
    return ""


def podgroup_name(cluster_name: str) -> str:
    return f"{cluster_name}-{TEMPLATE_NAME}"


def build_objects(cluster: Obj) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Workload and the PodGroup of a RayCluster."""
    name, namespace = name_of(cluster), namespace_of(cluster)
    policy = {"gang": {"minCount": 1 + sizing.desired_replicas(cluster.get("spec") or {})}}
    owner = [
        ownership.controller_reference(
            str(cluster.get("apiVersion") or constants.API_VERSION),
            "RayCluster",
            name,
            str((cluster.get("metadata") or {}).get("uid") or ""),
        )
    ]

    def metadata(object_name: str) -> dict[str, Any]:
        return {
            "name": object_name,
            "namespace": namespace,
            "labels": {constants.RAY_CLUSTER_LABEL: name},
            "ownerReferences": owner,
        }

    workload = {
        "apiVersion": GROUP_VERSION,
        "kind": WORKLOAD.kind,
        "metadata": metadata(name),
        "spec": {
            "controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": name},
            "podGroupTemplates": [{"name": TEMPLATE_NAME, "schedulingPolicy": policy}],
        },
    }
    podgroup = {
        "apiVersion": GROUP_VERSION,
        "kind": PODGROUP.kind,
        "metadata": metadata(podgroup_name(name)),
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": name, "podGroupTemplateName": TEMPLATE_NAME}
            },
            "schedulingPolicy": policy,
        },
    }
    return workload, podgroup


def _min_count(policy: Obj | None) -> int | None:
    gang = (policy or {}).get("gang")
    return gang.get("minCount") if isinstance(gang, dict) else None


def _workload_stale(live: Obj, desired: Obj) -> bool:
    templates = (live.get("spec") or {}).get("podGroupTemplates") or []
    if len(templates) != 1:
        return True
    want = desired["spec"]["podGroupTemplates"][0]
    return templates[0].get("name") != want["name"] or _min_count(
        templates[0].get("schedulingPolicy")
    ) != _min_count(want["schedulingPolicy"])


class KubernetesWAS(BatchScheduler):
    name = PLUGIN_NAME

    def __init__(self, client: Client) -> None:
        self._client = client

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        if kind_of(obj) != "RayCluster":
            return
        reason = skip_reason(obj)
        if reason:
            log.debug("Skipping Kubernetes workload-aware scheduling for %s: %s", name_of(obj), reason)
            await self._delete_objects(obj)
            return
        workload, podgroup = build_objects(obj)
        await self._sync_workload(obj, workload)
        await self._sync_podgroup(obj, podgroup)

    def add_metadata_to_child_resource(self, parent: Obj, child: dict[str, Any], group_name: str) -> None:
        if kind_of(parent) != "RayCluster" or skip_reason(parent) or not is_pod_like(child):
            return
        set_scheduler_name(child, DEFAULT_SCHEDULER)
        child["spec"]["schedulingGroup"] = {"podGroupName": podgroup_name(name_of(parent))}

    async def _get(self, resource: Resource, name: str, namespace: str) -> dict[str, Any] | None:
        try:
            return await self._client.get(resource, name, namespace)
        except errors.NotFoundError:
            return None
        except errors.KubeError as e:
            raise BatchSchedulingError(f"failed to get {resource.kind} {namespace}/{name}: {e}") from e

    @staticmethod
    def _controlled(live: Obj, cluster: Obj) -> bool:
        owner = ownership.controller_of(live.get("metadata") or {})
        uid = (cluster.get("metadata") or {}).get("uid")
        return owner is not None and owner.get("uid") == uid

    async def _create(self, resource: Resource, desired: dict[str, Any]) -> None:
        try:
            await self._client.create(resource, desired, desired["metadata"]["namespace"])
        except errors.KubeError as e:
            meta = desired["metadata"]
            raise BatchSchedulingError(
                f"failed to create {resource.kind} {meta['namespace']}/{meta['name']}: {e}"
            ) from e

    def _collision(self, resource: Resource, live: Obj) -> BatchSchedulingError:
        return BatchSchedulingError(
            f"{resource.kind} {namespace_of(live)}/{name_of(live)} already exists and is not owned by this "
            "RayCluster; rename it or use a different RayCluster name to avoid the collision"
        )

    async def _sync_workload(self, cluster: Obj, desired: dict[str, Any]) -> None:
        ns = namespace_of(cluster)
        live = await self._get(WORKLOAD, name_of(desired), ns)
        if live is None:
            await self._create(WORKLOAD, desired)
            return
        if not self._controlled(live, cluster):
            raise self._collision(WORKLOAD, live)
        if live["metadata"].get("deletionTimestamp"):
            raise BatchSchedulingError(f"Workload {ns}/{name_of(live)} is being deleted, will retry")
        if not _workload_stale(live, desired):
            return
        group = await self._get(PODGROUP, podgroup_name(name_of(cluster)), ns)
        if group is not None and self._controlled(group, cluster):
            await self._delete_podgroup(group)
            raise BatchSchedulingError(
                f"deleted PodGroup {ns}/{name_of(group)} before replacing stale Workload, will retry after "
                "deletion completes"
            )
        try:
            await self._client.delete(WORKLOAD, name_of(live), ns, uid=live["metadata"].get("uid"))
        except errors.NotFoundError:
            pass
        except errors.KubeError as e:
            raise BatchSchedulingError(f"failed to delete stale Workload {ns}/{name_of(live)}: {e}") from e
        raise BatchSchedulingError(
            f"deleted stale Workload {ns}/{name_of(live)}, will retry after deletion completes"
        )

    async def _sync_podgroup(self, cluster: Obj, desired: dict[str, Any]) -> None:
        ns = namespace_of(cluster)
        live = await self._get(PODGROUP, name_of(desired), ns)
        if live is None:
            await self._create(PODGROUP, desired)
            return
        if not self._controlled(live, cluster):
            raise self._collision(PODGROUP, live)
        if live["metadata"].get("deletionTimestamp"):
            await self._delete_podgroup(live)
            raise BatchSchedulingError(f"PodGroup {ns}/{name_of(live)} is being deleted, will retry")
        have = _min_count((live.get("spec") or {}).get("schedulingPolicy"))
        if have is not None and have == _min_count(desired["spec"]["schedulingPolicy"]):
            return
        await self._delete_podgroup(live)
        raise BatchSchedulingError(
            f"deleted stale PodGroup {ns}/{name_of(live)}, will retry after deletion completes"
        )

    async def _delete_podgroup(self, group: dict[str, Any]) -> bool:
        """Removes the protection finalizer, then deletes (unless already deleting); True if it wrote."""
        ns, name = namespace_of(group), name_of(group)
        metadata = group["metadata"]
        finalizers = metadata.get("finalizers") or []
        wrote = False
        if PROTECTION_FINALIZER in finalizers:
            metadata["finalizers"] = [f for f in finalizers if f != PROTECTION_FINALIZER]
            try:
                await self._client.update(PODGROUP, group)
            except errors.NotFoundError:
                return True
            except errors.KubeError as e:
                raise BatchSchedulingError(
                    f"failed to remove finalizer from PodGroup {ns}/{name}: {e}"
                ) from e
            wrote = True
        if metadata.get("deletionTimestamp"):
            return wrote
        try:
            await self._client.delete(PODGROUP, name, ns, uid=metadata.get("uid"))
        except errors.NotFoundError:
            return wrote
        except errors.KubeError as e:
            raise BatchSchedulingError(f"failed to delete PodGroup {ns}/{name}: {e}") from e
        return True

    async def _delete_objects(self, cluster: Obj) -> bool:
        ns, name = namespace_of(cluster), name_of(cluster)
        group = await self._get(PODGROUP, podgroup_name(name), ns)
        workload = await self._get(WORKLOAD, name, ns)
        if group is not None and self._controlled(group, cluster):
            await self._delete_podgroup(group)
            raise BatchSchedulingError(f"waiting for PodGroup {ns}/{podgroup_name(name)} to finish deleting")
        if workload is None or not self._controlled(workload, cluster):
            return False
        if workload["metadata"].get("deletionTimestamp"):
            raise BatchSchedulingError(f"Workload {ns}/{name} is being deleted, will retry")
        try:
            await self._client.delete(WORKLOAD, name, ns, uid=workload["metadata"].get("uid"))
        except errors.NotFoundError:
            return False
        except errors.KubeError as e:
            raise BatchSchedulingError(f"failed to delete Workload {ns}/{name}: {e}") from e
        return True
