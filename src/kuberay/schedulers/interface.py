"""The plugin interface every batch scheduler implements (upstream's `BatchScheduler`), and the no-op default
(`DefaultBatchScheduler`).

Objects cross it in wire form: a parent is a RayCluster's or RayJob's dict (with `kind`), a child is a pod,
a pod template (a PodTemplateSpec: no `kind`) or the RayCluster a RayJob makes. Only pods and pod
templates get `spec.schedulerName`: a RayCluster child never does.

`do_batch_scheduling_on_submission` and `cleanup_on_completion` may write (PodGroups and the like) and
raise `BatchSchedulingError` or the client's errors; `add_metadata_to_child_resource` is pure and never
raises (a problem is logged, as upstream logs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.schedulers.errors import SchedulerPluginError

Obj = Mapping[str, Any]


class BatchSchedulingError(SchedulerPluginError):
    """A plugin cannot do what a reconcile asks of it (the reconcile fails and is retried)."""


class BatchScheduler:
    """The default plugin: touches nothing. Subclasses override what their scheduler needs."""

    name = "default"

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        """Called with a RayCluster on every reconcile before its head pod is made, and with a RayJob on
        every Initializing reconcile before its cluster is made."""

    def add_metadata_to_child_resource(self, parent: Obj, child: dict[str, Any], group_name: str) -> None:
        """Stamps `child` (before it is created) with what the scheduler reads."""

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        """Called for a RayJob that finished or released its cluster; True when something was cleaned up."""
        return False


def is_pod_like(child: Obj) -> bool:
    """A Pod or a PodTemplateSpec (which has no kind), not a RayCluster."""
    return child.get("kind") in (None, "Pod")


def set_scheduler_name(child: dict[str, Any], name: str) -> None:
    if is_pod_like(child):
        child.setdefault("spec", {})["schedulerName"] = name


def labels_of(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def annotations_of(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def add_labels(child: dict[str, Any], labels: Mapping[str, str]) -> None:
    metadata = child.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}


def add_annotations(child: dict[str, Any], annotations: Mapping[str, str]) -> None:
    metadata = child.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}


def copy_label(parent: Obj, child: dict[str, Any], source: str, target: str | None = None) -> bool:
    """Copies a non-empty parent label to the child (as `target`, default the same key); True if copied."""
    value = labels_of(parent).get(source)
    if value:
        add_labels(child, {target or source: value})
        return True
    return False


def kind_of(obj: Obj) -> str:
    return str(obj.get("kind") or "")


def name_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def namespace_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")
