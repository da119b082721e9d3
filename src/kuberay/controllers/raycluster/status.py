"""The RayCluster's status as a pure function of the cluster, its pods and its head services.

`calculate_status` is upstream's `calculateStatus`: it never mutates its inputs and returns the new
`status` dict (wire form), or raises `StatusError` when the status cannot be known (more than one head pod
or head service, no head service, an empty clusterIP); then nothing is written. `status_changed` is the
write rule: only the fields upstream compares trigger a write (`lastUpdateTime`, `observedGeneration`, the
desired resources and `stateTransitionTimes` alone never do).

Beyond upstream, `failing_pods` names every pod that cannot make progress (image pull back-off, crash
loop, OOM kill, eviction, unschedulable); `calculate_status` reports them in the `PodFailure` condition so
`kubectl get raycluster -o yaml` says which pod is stuck and why; and, with in-tree autoscaling, the
`AutoscalerFailure` condition says the autoscaler sidecar is not running (`autoscalerhealth`).

Conditions follow `meta.SetStatusCondition`: `lastTransitionTime` changes only with `status`, reason and
message are updated in place, new conditions are appended.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import (
    ClusterState,
    RayCluster,
    RayClusterConditionReason,
    RayClusterConditionType,
)
from kuberay.builders import autoscaler, names
from kuberay.controllers.errors import ReconcileError
from kuberay.controllers.raycluster import autoscalerhealth, podstate, replicas, resources
from kuberay.controllers.raycluster.conditions import suspend_status
from kubesemantics import times
from kubesemantics.conditions import is_condition_true, remove_condition, set_condition

JSON = dict[str, Any]
Obj = Mapping[str, Any]

# Beyond upstream: the condition and Event reason that name a pod that cannot make progress.
POD_FAILURE_CONDITION = "PodFailure"
# The fields whose change makes the status worth writing (upstream's `inconsistentRayClusterStatus`).
COMPARED_FIELDS = (
    "state",
    "reason",
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
    "endpoints",
    "head",
    "conditions",
)


class StatusError(ReconcileError):
    """The status cannot be calculated from what the cache holds (the message says why)."""


@dataclass(frozen=True)
class ReplicaFailure:
    """A reconcile error that carries one of upstream's ReplicaFailure reasons (`FailedCreateWorkerPod`,
    ...); `message` is the whole error text as upstream joins it: ``"<reason>\\n<error>"``."""

    reason: str
    message: str


class ReplicaFailureError(ReconcileError):
    """A reconcile error that carries a `ReplicaFailure` reason (upstream's error markers)."""

    def __init__(self, reason: str, error: BaseException | str) -> None:
        self.failure = ReplicaFailure(reason, f"{reason}\n{error}")
        super().__init__(self.failure.message)


def head_pod_ready_condition(pod: Obj) -> tuple[str, str, str]:
    """Upstream's `FindHeadPodReadyCondition`: (status, reason, message) of `HeadPodReady`."""
    ready = podstate.pod_condition(pod, "Ready")
    if ready is None:
        return "False", RayClusterConditionReason.UNKNOWN, ""
    status, message = str(ready.get("status") or ""), str(ready.get("message") or "")
    reason = str(ready.get("reason") or "")
    if status == "True" and not reason:
        reason = RayClusterConditionReason.HEAD_POD_RUNNING_AND_READY
    if reason == "ContainersNotReady":
        for container in (pod.get("status") or {}).get("containerStatuses") or ():
            state = container.get("state") or {}
            detail = state.get("waiting") or state.get("terminated")
            if detail is not None:
                message = f"{message}; " if message else ""
                message += f"{container.get('name')}: {detail.get('message') or ''}"
                reason = str(detail.get("reason") or "")
                break
    return status, reason or RayClusterConditionReason.UNKNOWN, message


# --- services --------------------------------------------------------------------------------------------------


def head_service_selector(cluster_name: str) -> dict[str, str]:
    """The labels upstream lists head services by (`RayClusterHeadServiceListOptions`)."""
    return {
        constants.RAY_CLUSTER_LABEL: cluster_name,
        constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
        constants.RAY_ID_LABEL: names.check_label(names.identifier(cluster_name, constants.HEAD_NODE)),
    }


def _endpoints(current: Mapping[str, str] | None, services: Sequence[Obj]) -> dict[str, str] | None:
    if not services:
        return dict(current) if current is not None else None
    endpoints = dict(current or {})
    for port in services[0].get("spec", {}).get("ports") or ():
        name = port.get("name")
        if not name:
            continue
        target = port.get("targetPort")
        if port.get("nodePort"):
            endpoints[name] = str(port["nodePort"])
        elif isinstance(target, int) and target:
            endpoints[name] = str(target)
        elif isinstance(target, str) and target:
            endpoints[name] = target
    return endpoints


# --- the whole status ------------------------------------------------------------------------------------------


def calculate_status(
    cluster: RayCluster,
    pods: Sequence[Obj],
    head_services: Sequence[Obj],
    *,
    reconcile_error: BaseException | None,
    conditions_enabled: bool,
    now: datetime,
) -> JSON:
    """The new `status` of `cluster` (wire form) given its pods (all with `ray.io/cluster=<name>`) and
    the services listed with the head-service labels. `reconcile_error` is what this pass's reconcile
    raised: a `ReplicaFailure` sets the ReplicaFailure condition, None clears it."""
    # The sums read the spec's wire form, as the pod templates they add up are Kubernetes objects.
    spec = cluster.spec.dump()
    old: Obj = cluster.status.dump() if cluster.status is not None else {}
    status: JSON = copy.deepcopy(dict(old))
    stamp = times.format_time(now)
    conditions: list[JSON] = list(status.get("conditions") or [])

    if conditions_enabled:
        if isinstance(reconcile_error, ReplicaFailureError):
            failure = reconcile_error.failure
            set_condition(
                conditions,
                RayClusterConditionType.REPLICA_FAILURE,
                "True",
                failure.reason,
                failure.message,
                stamp,
            )
        elif reconcile_error is None:
            remove_condition(conditions, RayClusterConditionType.REPLICA_FAILURE)

    status["observedGeneration"] = cluster.metadata.generation or 0
    workers = podstate.worker_pods(pods)
    status["readyWorkerReplicas"] = sum(1 for p in workers if podstate.is_running_and_ready(p))
    status["availableWorkerReplicas"] = sum(1 for p in workers if podstate.phase(p) == "Running")
    status["desiredWorkerReplicas"] = replicas.desired_worker_replicas(spec)
    status["minWorkerReplicas"] = replicas.min_worker_replicas(spec)
    status["maxWorkerReplicas"] = replicas.max_worker_replicas(spec)
    status.update(resources.desired_resources(spec))

    if (
        reconcile_error is None
        and len(pods) == status["desiredWorkerReplicas"] + 1
        and podstate.all_pods_running(pods)
    ):
        status["state"] = ClusterState.READY.value
        status["reason"] = ""

    heads = podstate.head_pods(pods)
    if len(heads) > 1:
        raise StatusError(f"multiple head pods found for RayCluster {cluster.namespace}/{cluster.name}")
    head = heads[0] if heads else None

    if conditions_enabled:
        _set_pod_conditions(conditions, head, pods, stamp, cluster.namespace)
        _set_suspension(conditions, old, spec, pods, stamp)
        _set_autoscaler_condition(conditions, spec, head, stamp, cluster.namespace)

    if cluster.spec.suspend is True and not pods:
        status["state"] = ClusterState.SUSPENDED.value

    endpoints = _endpoints(status.get("endpoints"), head_services)
    if endpoints is not None:
        status["endpoints"] = endpoints
    status["head"] = _head_info(cluster.name, head, head_services)
    if conditions_enabled or conditions:
        status["conditions"] = conditions
    status["lastUpdateTime"] = stamp
    if old.get("state") != status.get("state"):
        transitions = dict(status.get("stateTransitionTimes") or {})
        transitions[str(status.get("state") or "")] = stamp
        status["stateTransitionTimes"] = transitions
    return _drop_empty(status)


def _set_pod_conditions(
    conditions: list[JSON], head: Obj | None, pods: Sequence[Obj], stamp: str, namespace: str
) -> None:
    if head is None:
        set_condition(
            conditions,
            RayClusterConditionType.HEAD_POD_READY,
            "False",
            RayClusterConditionReason.HEAD_POD_NOT_FOUND,
            "Head Pod not found",
            stamp,
        )
    else:
        set_condition(
            conditions, RayClusterConditionType.HEAD_POD_READY, *head_pod_ready_condition(head), stamp
        )

    current = {"conditions": conditions}
    if not is_condition_true(current, RayClusterConditionType.PROVISIONED) and (
        suspend_status(current) != RayClusterConditionType.SUSPENDED
    ):
        if podstate.all_pods_running(pods):
            set_condition(
                conditions,
                RayClusterConditionType.PROVISIONED,
                "True",
                RayClusterConditionReason.ALL_POD_RUNNING_AND_READY_FIRST_TIME,
                "All Ray Pods are ready for the first time",
                stamp,
            )
        else:
            set_condition(
                conditions,
                RayClusterConditionType.PROVISIONED,
                "False",
                RayClusterConditionReason.PODS_PROVISIONING,
                "RayCluster Pods are being provisioned for first time",
                stamp,
            )

    problems = podstate.failing_pods(pods)
    if problems:
        message = "; ".join(p.describe(namespace) for p in problems)
        set_condition(conditions, POD_FAILURE_CONDITION, "True", problems[0].reason, message, stamp)
    else:
        remove_condition(conditions, POD_FAILURE_CONDITION)


def _set_autoscaler_condition(
    conditions: list[JSON], spec: Obj, head: Obj | None, stamp: str, namespace: str
) -> None:
    problem = (
        autoscalerhealth.autoscaler_problem(head, namespace)
        if head is not None and autoscaler.is_enabled(spec)
        else None
    )
    if problem is not None:
        set_condition(conditions, autoscalerhealth.CONDITION, "True", problem.reason, problem.message, stamp)
    else:
        remove_condition(conditions, autoscalerhealth.CONDITION)


def _set_suspension(conditions: list[JSON], old: Obj, spec: Obj, pods: Sequence[Obj], stamp: str) -> None:
    suspending, suspended = RayClusterConditionType.SUSPENDING, RayClusterConditionType.SUSPENDED
    before = suspend_status(old)
    if before == suspending:
        if not pods:
            set_condition(
                conditions,
                RayClusterConditionType.PROVISIONED,
                "False",
                RayClusterConditionReason.PODS_PROVISIONING,
                "RayCluster has been suspended",
                stamp,
            )
            set_condition(conditions, suspending, "False", RayClusterConditionReason.SUSPENDING, "", stamp)
            set_condition(conditions, suspended, "True", RayClusterConditionReason.SUSPENDED, "", stamp)
    elif before == suspended:
        if spec.get("suspend") is False:
            set_condition(conditions, suspended, "False", RayClusterConditionReason.SUSPENDED, "", stamp)
    else:
        set_condition(conditions, suspended, "False", RayClusterConditionReason.SUSPENDED, "", stamp)
        wanted = "True" if spec.get("suspend") is True else "False"
        set_condition(conditions, suspending, wanted, RayClusterConditionReason.SUSPENDING, "", stamp)


def _head_info(cluster_name: str, head: Obj | None, services: Sequence[Obj]) -> JSON:
    pod_ip = str((head or {}).get("status", {}).get("podIP") or "") if head is not None else ""
    info: JSON = {"podIP": pod_ip, "podName": str(head["metadata"]["name"]) if head is not None else ""}
    if not services:
        raise StatusError(f"unable to find head service. cluster name {cluster_name}")
    if len(services) > 1:
        raise StatusError(f"found multiple head services. cluster name {cluster_name}")
    service = services[0]
    cluster_ip = str(service.get("spec", {}).get("clusterIP") or "")
    if not cluster_ip:
        raise StatusError(f"head service IP is empty. cluster name {cluster_name}")
    info["serviceIP"] = pod_ip if cluster_ip == "None" else cluster_ip
    info["serviceName"] = str(service["metadata"]["name"])
    return info


# The int32 counts upstream declares `omitempty`: a zero count is left out of the JSON, not written as 0.
_OMITTED_WHEN_ZERO = frozenset(
    {
        "readyWorkerReplicas",
        "availableWorkerReplicas",
        "desiredWorkerReplicas",
        "minWorkerReplicas",
        "maxWorkerReplicas",
        "observedGeneration",
    }
)


def _drop_empty(status: JSON) -> JSON:
    """Go's `omitempty`: empty strings and maps, and the zero counts, are not written."""
    status = {
        k: v
        for k, v in status.items()
        if v not in ("", None, {}) and not (k in _OMITTED_WHEN_ZERO and v == 0)
    }
    if "head" in status:
        status["head"] = {k: v for k, v in status["head"].items() if v != ""}
        if not status["head"]:
            del status["head"]
    return status


def status_changed(old: Obj, new: Obj) -> bool:
    """Whether `new` differs from `old` in a field worth a write."""
    return any(old.get(field) != new.get(field) for field in COMPARED_FIELDS)
