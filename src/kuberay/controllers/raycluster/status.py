"""The RayCluster's status as a pure function of the cluster, its pods and its head services.

`calculate_status` is upstream's `calculateStatus`: it never mutates its inputs and returns the new
`status` dict (wire form), or raises `StatusError` when the status cannot be known (more than one head pod
or head service, no head service, an empty clusterIP); then nothing is written. `status_changed` is the
write rule: only the fields upstream compares trigger a write (`lastUpdateTime`, `observedGeneration`, the
desired resources and `stateTransitionTimes` alone never do).

Beyond upstream, `failing_pods` names every pod that cannot make progress (image pull back-off, crash
loop, OOM kill, eviction, unschedulable); `calculate_status` reports them in the `PodFailure` condition so
`kubectl get raycluster -o yaml` says which pod is stuck and why.

Conditions follow `meta.SetStatusCondition`: `lastTransitionTime` changes only with `status`, reason and
message are updated in place, new conditions are appended.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import ClusterState, RayClusterConditionReason, RayClusterConditionType
from kuberay.builders import names
from kuberay.builders.raystart import is_gpu_resource_key
from kubesemantics import quantity

JSON = dict[str, Any]
Obj = Mapping[str, Any]

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
TPU_RESOURCE = "google.com/tpu"
# Beyond upstream: the condition and Event reason that name a pod that cannot make progress.
POD_FAILURE_CONDITION = "PodFailure"
# Container waiting reasons after which a pod will not become ready without a change from outside.
FAILING_WAITING_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
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


class StatusError(Exception):
    """The status cannot be calculated from what the cache holds (the message says why)."""


@dataclass(frozen=True)
class ReplicaFailure:
    """A reconcile error that carries one of upstream's ReplicaFailure reasons (`FailedCreateWorkerPod`,
    ...); `message` is the whole error text as upstream joins it: ``"<reason>\\n<error>"``."""

    reason: str
    message: str


class ReplicaFailureError(Exception):
    """A reconcile error that carries a `ReplicaFailure` reason (upstream's error markers)."""

    def __init__(self, reason: str, error: BaseException | str) -> None:
        self.failure = ReplicaFailure(reason, f"{reason}\n{error}")
        super().__init__(self.failure.message)


@dataclass(frozen=True)
class PodProblem:
    """A pod that cannot make progress: its name, the kubelet's or scheduler's reason, and the message."""

    pod: str
    reason: str
    message: str

    def describe(self, namespace: str) -> str:
        text = f"Pod {namespace}/{self.pod} is failing: {self.reason}"
        return f"{text}: {self.message}" if self.message else text


# --- replica arithmetic ----------------------------------------------------------------------------------------


def _int(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


def _clamp32(value: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, value))


def group_desired_replicas(group: Obj) -> int:
    """Upstream's `GetWorkerGroupDesiredReplicas`: pods (not replicas) the group should run."""
    if group.get("suspend") is True:
        return 0
    low, high = _int(group.get("minReplicas"), 0), _int(group.get("maxReplicas"), INT32_MAX)
    replicas = group.get("replicas")
    wanted = low if not isinstance(replicas, int) or replicas < low else replicas
    wanted = min(wanted, high)
    return _clamp32(wanted * _int(group.get("numOfHosts"), 1))


def worker_groups(spec: Obj) -> list[Obj]:
    return list(spec.get("workerGroupSpecs") or [])


def desired_worker_replicas(spec: Obj) -> int:
    return _clamp32(sum(group_desired_replicas(g) for g in worker_groups(spec)))


def min_worker_replicas(spec: Obj) -> int:
    return _clamp32(
        sum(
            _int(g.get("minReplicas"), 0) * _int(g.get("numOfHosts"), 1)
            for g in worker_groups(spec)
            if g.get("suspend") is not True
        )
    )


def max_worker_replicas(spec: Obj) -> int:
    return _clamp32(
        sum(
            _int(g.get("maxReplicas"), INT32_MAX) * _int(g.get("numOfHosts"), 1)
            for g in worker_groups(spec)
            if g.get("suspend") is not True
        )
    )


# --- desired resources -----------------------------------------------------------------------------------------


@dataclass
class _Amount:
    """A quantity being summed, with the format of its first term (as Go's `Quantity.Add` keeps)."""

    value: Fraction
    binary: bool


def _pod_resources(pod_spec: Obj) -> dict[str, _Amount]:
    total: dict[str, _Amount] = {}
    for container in pod_spec.get("containers") or ():
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in merged.items():
            amount = quantity.parse(value)
            if name in total:
                total[name].value += amount
            else:
                total[name] = _Amount(amount, quantity.is_binary(value))
    return total


def desired_resources(spec: Obj) -> dict[str, str]:
    """`desiredCPU`, `desiredMemory`, `desiredGPU` and `desiredTPU`: the head pod plus every non-suspended
    group's pod × `numOfHosts` × raw `replicas`."""
    head = (spec.get("headGroupSpec") or {}).get("template") or {}
    total = _pod_resources(head.get("spec") or {})
    for group in worker_groups(spec):
        if group.get("suspend") is True:
            continue
        factor = _int(group.get("numOfHosts"), 1) * _int(group.get("replicas"), 0)
        for name, amount in _pod_resources((group.get("template") or {}).get("spec") or {}).items():
            if name in total:
                total[name].value += amount.value * factor
            else:
                total[name] = _Amount(amount.value * factor, amount.binary)

    def text(name: str) -> str:
        amount = total.get(name)
        return quantity.canonical(amount.value, amount.binary) if amount else "0"

    # upstream `sumGPUs`: every GPU resource name, the one `ray start`'s `num-gpus` reads (MIG slices too).
    gpus = [a for n, a in total.items() if is_gpu_resource_key(n) and a.value != 0]
    gpu = quantity.canonical(sum((a.value for a in gpus), Fraction(0)), gpus[0].binary) if gpus else "0"
    return {
        "desiredCPU": text("cpu"),
        "desiredMemory": text("memory"),
        "desiredGPU": gpu,
        "desiredTPU": text(TPU_RESOURCE),
    }


# --- pods ------------------------------------------------------------------------------------------------------


def _labels(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def pod_condition(pod: Obj, kind: str) -> Obj | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return condition  # type: ignore[no-any-return]
    return None


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_running_and_ready(pod: Obj) -> bool:
    ready = pod_condition(pod, "Ready")
    return phase(pod) == "Running" and ready is not None and ready.get("status") == "True"


def all_pods_running(pods: Sequence[Obj]) -> bool:
    """Upstream's `CheckAllPodsRunning`: some pods, all Running, none with a Ready condition not True."""
    if not pods:
        return False
    for pod in pods:
        if phase(pod) != "Running":
            return False
        ready = pod_condition(pod, "Ready")
        if ready is not None and ready.get("status") != "True":
            return False
    return True


def head_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if _labels(p).get(constants.RAY_NODE_TYPE_LABEL) == constants.HEAD_NODE]


def worker_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if _labels(p).get(constants.RAY_NODE_TYPE_LABEL) == constants.WORKER_NODE]


def pod_problem(pod: Obj) -> PodProblem | None:
    """Why `pod` cannot make progress, if it cannot: evicted, unschedulable, a container stuck pulling its
    image or crash-looping, or killed for memory."""
    name = str(pod["metadata"].get("name") or "")
    status = pod.get("status") or {}
    if status.get("reason") == "Evicted":
        return PodProblem(name, "Evicted", str(status.get("message") or ""))
    scheduled = pod_condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False" and scheduled.get("reason"):
        return PodProblem(name, str(scheduled["reason"]), str(scheduled.get("message") or ""))
    statuses = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    for container in statuses:
        state = container.get("state") or {}
        waiting = state.get("waiting") or {}
        if waiting.get("reason") in FAILING_WAITING_REASONS:
            last = (container.get("lastState") or {}).get("terminated") or {}
            reason = "OOMKilled" if last.get("reason") == "OOMKilled" else str(waiting["reason"])
            return PodProblem(
                name, reason, f"{container.get('name')}: {waiting.get('message') or ''}".rstrip(": ")
            )
        terminated = state.get("terminated") or {}
        if terminated.get("reason") == "OOMKilled":
            return PodProblem(
                name, "OOMKilled", f"{container.get('name')}: exit code {terminated.get('exitCode')}"
            )
    return None


def failing_pods(pods: Iterable[Obj]) -> list[PodProblem]:
    """Every pod that cannot make progress, sorted by name."""
    problems = (pod_problem(p) for p in pods if not p["metadata"].get("deletionTimestamp"))
    return sorted((p for p in problems if p is not None), key=lambda p: p.pod)


# --- conditions ------------------------------------------------------------------------------------------------


def find_condition(conditions: Iterable[Obj], kind: str) -> Obj | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def is_condition_true(status: Obj, kind: str) -> bool:
    found = find_condition(status.get("conditions") or (), kind)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: list[JSON], kind: str, status: str, reason: str, message: str, now: str
) -> None:
    """`meta.SetStatusCondition` (observedGeneration left 0, as upstream leaves it)."""
    kind, status, reason = str(kind), str(status), str(reason)  # plain strings, not the vocabulary enums
    for condition in conditions:
        if condition.get("type") == kind:
            if condition.get("status") != status:
                condition["status"] = status
                condition["lastTransitionTime"] = now
            condition["reason"] = reason
            condition["message"] = message
            return
    conditions.append(
        {"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
    )


def remove_condition(conditions: list[JSON], kind: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != kind]


def suspend_status(status: Obj) -> str:
    """The first of `RayClusterSuspending` / `RayClusterSuspended` that is True, else ""."""
    for condition in status.get("conditions") or ():
        if (
            condition.get("type")
            in (
                RayClusterConditionType.SUSPENDING,
                RayClusterConditionType.SUSPENDED,
            )
            and condition.get("status") == "True"
        ):
            return str(condition["type"])
    return ""


def head_pod_ready_condition(pod: Obj) -> tuple[str, str, str]:
    """Upstream's `FindHeadPodReadyCondition`: (status, reason, message) of `HeadPodReady`."""
    ready = pod_condition(pod, "Ready")
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


def rfc3339(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def calculate_status(
    cluster: Obj,
    pods: Sequence[Obj],
    head_services: Sequence[Obj],
    *,
    reconcile_error: BaseException | None,
    conditions_enabled: bool,
    now: datetime,
) -> JSON:
    """The new `status` of `cluster` (its wire form) given its pods (all with `ray.io/cluster=<name>`) and
    the services listed with the head-service labels. `reconcile_error` is what this pass's reconcile
    raised: a `ReplicaFailure` sets the ReplicaFailure condition, None clears it."""
    spec = cluster.get("spec") or {}
    old: Obj = cluster.get("status") or {}
    status: JSON = copy.deepcopy(dict(old))
    stamp = rfc3339(now)
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

    status["observedGeneration"] = cluster.get("metadata", {}).get("generation") or 0
    workers = worker_pods(pods)
    status["readyWorkerReplicas"] = sum(1 for p in workers if is_running_and_ready(p))
    status["availableWorkerReplicas"] = sum(1 for p in workers if phase(p) == "Running")
    status["desiredWorkerReplicas"] = desired_worker_replicas(spec)
    status["minWorkerReplicas"] = min_worker_replicas(spec)
    status["maxWorkerReplicas"] = max_worker_replicas(spec)
    status.update(desired_resources(spec))

    if (
        reconcile_error is None
        and len(pods) == status["desiredWorkerReplicas"] + 1
        and all_pods_running(pods)
    ):
        status["state"] = ClusterState.READY.value
        status["reason"] = ""

    heads = head_pods(pods)
    if len(heads) > 1:
        raise StatusError(f"multiple head pods found for RayCluster {_key(cluster)}")
    head = heads[0] if heads else None

    if conditions_enabled:
        _set_pod_conditions(conditions, head, pods, stamp, cluster)
        _set_suspension(conditions, old, spec, pods, stamp)

    if spec.get("suspend") is True and not pods:
        status["state"] = ClusterState.SUSPENDED.value

    endpoints = _endpoints(status.get("endpoints"), head_services)
    if endpoints is not None:
        status["endpoints"] = endpoints
    status["head"] = _head_info(cluster, head, head_services)
    if conditions_enabled or conditions:
        status["conditions"] = conditions
    status["lastUpdateTime"] = stamp
    if old.get("state") != status.get("state"):
        times = dict(status.get("stateTransitionTimes") or {})
        times[str(status.get("state") or "")] = stamp
        status["stateTransitionTimes"] = times
    return _drop_empty(status)


def _set_pod_conditions(
    conditions: list[JSON], head: Obj | None, pods: Sequence[Obj], stamp: str, cluster: Obj
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
        if all_pods_running(pods):
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

    problems = failing_pods(pods)
    if problems:
        namespace = str(cluster.get("metadata", {}).get("namespace") or "")
        message = "; ".join(p.describe(namespace) for p in problems)
        set_condition(conditions, POD_FAILURE_CONDITION, "True", problems[0].reason, message, stamp)
    else:
        remove_condition(conditions, POD_FAILURE_CONDITION)


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


def _head_info(cluster: Obj, head: Obj | None, services: Sequence[Obj]) -> JSON:
    pod_ip = str((head or {}).get("status", {}).get("podIP") or "") if head is not None else ""
    info: JSON = {"podIP": pod_ip, "podName": str(head["metadata"]["name"]) if head is not None else ""}
    if not services:
        raise StatusError(f"unable to find head service. cluster name {cluster['metadata'].get('name')}")
    if len(services) > 1:
        raise StatusError(f"found multiple head services. cluster name {cluster['metadata'].get('name')}")
    service = services[0]
    cluster_ip = str(service.get("spec", {}).get("clusterIP") or "")
    if not cluster_ip:
        raise StatusError(f"head service IP is empty. cluster name {cluster['metadata'].get('name')}")
    info["serviceIP"] = pod_ip if cluster_ip == "None" else cluster_ip
    info["serviceName"] = str(service["metadata"]["name"])
    return info


def _drop_empty(status: JSON) -> JSON:
    """Go's `omitempty`: empty strings and maps are not written."""
    status = {k: v for k, v in status.items() if v not in ("", None, {})}
    if "head" in status:
        status["head"] = {k: v for k, v in status["head"].items() if v != ""}
        if not status["head"]:
            del status["head"]
    return status


def _key(cluster: Obj) -> str:
    metadata = cluster.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


def status_changed(old: Obj, new: Obj) -> bool:
    """Whether `new` differs from `old` in a field worth a write."""
    return any(old.get(field) != new.get(field) for field in COMPARED_FIELDS)
