"""YuniKorn (`yunikorn`, upstream's `YuniKornScheduler`): no objects of its own; pods carry YuniKorn's application and
queue labels and, for a gang (label `ray.io/gang-scheduling-enabled` present, any value), the task-groups
annotation and their own task group's name.

The task-groups annotation is what Go's `json.Marshal` writes for upstream's task groups: a compact JSON
array, fields in struct order, empty optional fields left out, map keys sorted, `<`, `>` and `&` escaped.
"""

from __future__ import annotations

import json
from typing import Any

from kuberay.api import constants
from kuberay.schedulers import sizing
from kuberay.schedulers.interface import (
    BatchScheduler,
    Obj,
    add_annotations,
    annotations_of,
    copy_label,
    kind_of,
    labels_of,
    set_scheduler_name,
)

APP_ID_LABEL = "yunikorn.apache.org/app-id"
QUEUE_LABEL = "yunikorn.apache.org/queue"
POD_APP_ID_LABEL = "applicationId"  # the legacy short keys older YuniKorn versions read on pods
POD_QUEUE_LABEL = "queue"
TASK_GROUPS_ANNOTATION = "yunikorn.apache.org/task-groups"
TASK_GROUP_NAME_ANNOTATION = "yunikorn.apache.org/task-group-name"


def _group(name: str, min_member: int, pod_spec: Obj) -> dict[str, Any]:
    group: dict[str, Any] = {"minResource": dict(sorted(sizing.pod_resource(pod_spec).items()))}
    if pod_spec.get("nodeSelector"):
        group["nodeSelector"] = dict(sorted(pod_spec["nodeSelector"].items()))
    if pod_spec.get("affinity") is not None:
        group["affinity"] = pod_spec["affinity"]
    group["name"] = name
    if pod_spec.get("tolerations"):
        group["tolerations"] = pod_spec["tolerations"]
    group["minMember"] = min_member
    return group


def cluster_task_groups(spec: Obj) -> list[dict[str, Any]]:
    """The head's group (one member) and each worker group's (minReplicas × numOfHosts members), each with
    one pod's resources."""
    head = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    groups = [_group(constants.HEAD_GROUP_NAME, 1, head)]
    for worker in spec.get("workerGroupSpecs") or ():
        members = (worker.get("minReplicas") or 0) * (worker.get("numOfHosts") or 1)
        groups.append(
            _group(worker.get("groupName") or "", members, (worker.get("template") or {}).get("spec") or {})
        )
    return groups


def task_groups(parent: Obj) -> str:
    """The annotation's value for a RayCluster, or for a RayJob (its cluster's groups and the submitter's,
    whatever its submission mode)."""
    spec = parent.get("spec") or {}
    groups: list[dict[str, Any]] = []
    if kind_of(parent) == "RayCluster":
        groups = cluster_task_groups(spec)
    elif kind_of(parent) == "RayJob":
        groups = cluster_task_groups(spec.get("rayClusterSpec") or {})
        groups.append(_group(constants.SUBMITTER_GROUP_NAME, 1, sizing.submitter_template_spec(spec)))
    text = json.dumps(groups, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class YuniKorn(BatchScheduler):
    name = "yunikorn"

    def add_metadata_to_child_resource(self, parent: Obj, child: dict[str, Any], group_name: str) -> None:
        copy_label(parent, child, APP_ID_LABEL, POD_APP_ID_LABEL)
        copy_label(parent, child, QUEUE_LABEL, POD_QUEUE_LABEL)
        set_scheduler_name(child, self.name)
        if constants.RAY_GANG_SCHEDULING_ENABLED_LABEL not in labels_of(parent):
            return
        groups = annotations_of(parent).get(TASK_GROUPS_ANNOTATION) or task_groups(parent)
        add_annotations(child, {TASK_GROUPS_ANNOTATION: groups})
        if group_name:
            add_annotations(child, {TASK_GROUP_NAME_ANNOTATION: group_name})
