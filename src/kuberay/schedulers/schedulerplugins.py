"""scheduler-plugins' coscheduling (`scheduler-plugins`, upstream's `KubeScheduler`): a
`scheduling.x-k8s.io/v1alpha1` PodGroup named as the RayCluster, made once when the cluster asks for a gang
(label `ray.io/gang-scheduling-enabled` present) and never resized; pods name it in a label and are
scheduled by `scheduler-plugins-scheduler`. Only RayClusters are supported: a RayJob stays Initializing with
upstream's error.
"""

from __future__ import annotations

from typing import Any

from kuberay.api import constants
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import Resource
from kuberay.schedulers import sizing
from kuberay.schedulers.interface import (
    BatchScheduler,
    BatchSchedulingError,
    Obj,
    add_labels,
    kind_of,
    labels_of,
    name_of,
    namespace_of,
    set_scheduler_name,
)
from kuberay.schedulers.served import ServedKinds

PODGROUP = Resource("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
GO_TYPES = {"RayJob": "*v1.RayJob", "RayService": "*v1.RayService"}


def gang_enabled(obj: Obj) -> bool:
    return constants.RAY_GANG_SCHEDULING_ENABLED_LABEL in labels_of(obj)


def build_podgroup(cluster: Obj) -> dict[str, Any]:
    """The cluster's PodGroup: all desired pods (autoscaling is not considered), owned (not controlled)."""
    spec = cluster.get("spec") or {}
    return {
        "apiVersion": PODGROUP.api_version,
        "kind": PODGROUP.kind,
        "metadata": {
            "name": name_of(cluster),
            "namespace": namespace_of(cluster),
            "ownerReferences": [
                {
                    "apiVersion": str(cluster.get("apiVersion") or constants.API_VERSION),
                    "kind": kind_of(cluster),
                    "name": name_of(cluster),
                    "uid": str((cluster.get("metadata") or {}).get("uid") or ""),
                }
            ],
        },
        "spec": {
            "minMember": sizing.desired_replicas(spec) + 1,
            "minResources": sizing.desired_resources(spec),
        },
    }


class SchedulerPlugins(BatchScheduler):
    name = "scheduler-plugins-scheduler"  # the pods' schedulerName; the flag's value is `scheduler-plugins`

    def __init__(self, client: Client, served: ServedKinds) -> None:
        self._client = client
        self._served = served

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        kind = kind_of(obj)
        if kind != "RayCluster":
            raise BatchSchedulingError(
                f"currently only RayCluster is supported, got {GO_TYPES.get(kind, kind)}"
            )
        if not gang_enabled(obj):
            return
        namespace = namespace_of(obj)
        if not await self._served.served(PODGROUP, namespace):
            self._served.report_missing(PODGROUP, "scheduler-plugins", obj)
            return
        try:
            await self._client.get(PODGROUP, name_of(obj), namespace)
            return
        except errors.NotFoundError:
            pass
        try:
            await self._client.create(PODGROUP, build_podgroup(obj), namespace)
        except errors.AlreadyExistsError:
            return
        except errors.KubeError as e:
            raise BatchSchedulingError(f"failed to create PodGroup: {e}") from e

    def add_metadata_to_child_resource(self, parent: Obj, child: dict[str, Any], group_name: str) -> None:
        if gang_enabled(parent):
            add_labels(child, {POD_GROUP_LABEL: name_of(parent)})
        set_scheduler_name(child, self.name)
