"""The sizing helpers gang schedulers size their groups with (upstream's `CalculateDesiredResources`,
`CalculateMinResources` and their kin in `utils`), on the wire form.

Resource lists are `{name: quantity text}` in Go's canonical form; a sum keeps the format (binary or
decimal) of its first term, as Go's `Quantity.Add` keeps its receiver's. Counts are pods: a multi-host
replica counts `numOfHosts` pods; a suspended worker group counts nothing (except in `desired_replicas`,
where it is zero too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.rayjob import JobSubmissionMode
from kuberay.builders import submitter
from kubesemantics import quantity

Obj = Mapping[str, Any]
ResourceList = dict[str, str]
INT32_MAX = 2**31 - 1


def as_int(value: Any, default: int) -> int:
    """An integer field of the wire form, or `default` when it is unset or not an integer."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


def _text(amounts: Mapping[str, quantity.Amount]) -> ResourceList:
    return {name: amount.text() for name, amount in amounts.items()}


def pod_resource(pod_spec: Obj) -> ResourceList:
    """`CalculatePodResource`: over `containers` only, each container's requests plus the names it only
    limits."""
    total: dict[str, quantity.Amount] = {}
    for container in pod_spec.get("containers") or ():
        resources = container.get("resources") or {}
        quantity.add(total, {**(resources.get("limits") or {}), **(resources.get("requests") or {})})
    return _text(total)


def sum_resources(lists: Iterable[ResourceList], factors: Iterable[int] | None = None) -> ResourceList:
    """The sum of resource lists, each times its factor (1 when not given)."""
    total: dict[str, quantity.Amount] = {}
    factor_list = list(factors) if factors is not None else None
    for index, resources in enumerate(lists):
        quantity.add(total, resources, factor_list[index] if factor_list is not None else 1)
    return _text(total)


def _groups(spec: Obj) -> list[Obj]:
    return list(spec.get("workerGroupSpecs") or ())


def _template_spec(group: Obj) -> Obj:
    return (group.get("template") or {}).get("spec") or {}


def group_desired_replicas(group: Obj) -> int:
    """upstream `GetWorkerGroupDesiredReplicas`: the pods (not replicas) a worker group should run."""
    if group.get("suspend") is True:
        return 0
    low, high = as_int(group.get("minReplicas"), 0), as_int(group.get("maxReplicas"), INT32_MAX)
    replicas = group.get("replicas")
    wanted = low if not isinstance(replicas, int) or replicas < low else replicas
    return min(wanted, high) * as_int(group.get("numOfHosts"), 1)


def desired_replicas(spec: Obj) -> int:
    """`CalculateDesiredReplicas`: the worker pods the spec asks for (replicas clamped to min and max)."""
    return sum(group_desired_replicas(g) for g in _groups(spec))


def min_replicas(spec: Obj) -> int:
    """`CalculateMinReplicas`: Σ minReplicas × numOfHosts over the non-suspended groups."""
    return sum(
        as_int(g.get("minReplicas"), 0) * as_int(g.get("numOfHosts"), 1)
        for g in _groups(spec)
        if g.get("suspend") is not True
    )


def _cluster_resources(spec: Obj, count_field: str) -> ResourceList:
    head = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    lists, factors = [pod_resource(head)], [1]
    for group in _groups(spec):
        if group.get("suspend") is True:
            continue
        lists.append(pod_resource(_template_spec(group)))
        factors.append(as_int(group.get("numOfHosts"), 1) * as_int(group.get(count_field), 0))
    return sum_resources(lists, factors)


def desired_resources(spec: Obj) -> ResourceList:
    """`CalculateDesiredResources`: the head plus every non-suspended group × numOfHosts × raw `replicas`
    (unset is 0, not clamped)."""
    return _cluster_resources(spec, "replicas")


def min_resources(spec: Obj) -> ResourceList:
    """`CalculateMinResources`: the head plus every non-suspended group × numOfHosts × `minReplicas`."""
    return _cluster_resources(spec, "minReplicas")


def autoscaling(spec: Obj) -> bool:
    return spec.get("enableInTreeAutoscaling") is True


def gang_size(spec: Obj) -> tuple[int, ResourceList]:
    """Volcano's (minMember, minResources) of a cluster spec: desired sizes, or minimal ones when the
    in-tree autoscaler may scale down to them."""
    if autoscaling(spec):
        return min_replicas(spec) + 1, min_resources(spec)
    return desired_replicas(spec) + 1, desired_resources(spec)


def submitter_template_spec(job_spec: Obj) -> Obj:
    """The pod spec of `getSubmitterTemplate`: the user's `submitterPodTemplate`, else the default whose
    only container is the submitter with its fixed resources."""
    template = job_spec.get("submitterPodTemplate")
    if template is not None:
        spec: Obj = template.get("spec") or {}
        return spec
    return {
        "containers": [
            {"name": constants.SUBMITTER_CONTAINER_NAME, "resources": submitter.DEFAULT_RESOURCES}
        ],
        "restartPolicy": "Never",
    }


def submitter_resources(job_spec: Obj) -> ResourceList:
    """What the submitter holds: its pod in K8sJobMode, the sidecar container in SidecarMode, nothing
    otherwise (HTTPMode, InteractiveMode)."""
    mode = job_spec.get("submissionMode") or JobSubmissionMode.K8S_JOB_MODE
    if mode == JobSubmissionMode.K8S_JOB_MODE:
        return pod_resource(submitter_template_spec(job_spec))
    if mode == JobSubmissionMode.SIDECAR_MODE:
        return pod_resource({"containers": [{"resources": submitter.DEFAULT_RESOURCES}]})
    return {}
