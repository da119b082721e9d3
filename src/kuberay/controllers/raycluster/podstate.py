"""The state of one pod as the RayCluster controller reads it: phase and conditions, whether it is running
and ready, why it cannot make progress (`pod_problem`, beyond upstream), and whether it must be deleted and
replaced (upstream's `shouldDeletePod`). Pure functions of the pod's wire form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kuberay.api import constants
from kubesemantics.conditions import find_condition

Obj = Mapping[str, Any]

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


def pod_name(obj: Obj) -> str:
    return str(obj["metadata"].get("name") or "")


@dataclass(frozen=True)
class PodProblem:
    """A pod that cannot make progress: its name, the kubelet's or scheduler's reason, and the message."""

    pod: str
    reason: str
    message: str

    def describe(self, namespace: str) -> str:
        text = f"Pod {namespace}/{self.pod} is failing: {self.reason}"
        return f"{text}: {self.message}" if self.message else text


def pod_labels(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def pod_condition(pod: Obj, kind: str) -> Obj | None:
    return find_condition((pod.get("status") or {}).get("conditions") or (), kind)


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
    return [p for p in pods if pod_labels(p).get(constants.RAY_NODE_TYPE_LABEL) == constants.HEAD_NODE]


def worker_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if pod_labels(p).get(constants.RAY_NODE_TYPE_LABEL) == constants.WORKER_NODE]


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


def ray_container_terminated(p: Obj) -> Obj | None:
    """The `state.terminated` of the Ray container (`spec.containers[0]`), if it has terminated."""
    containers = p.get("spec", {}).get("containers") or [{}]
    ray_name = containers[0].get("name")
    for container in (p.get("status") or {}).get("containerStatuses") or ():
        if container.get("name") == ray_name:
            terminated: Obj | None = (container.get("state") or {}).get("terminated")
            return terminated
    return None


def should_delete_pod(p: Obj, node_type: str) -> tuple[bool, str]:
    """Upstream's `shouldDeletePod`: a pod in a terminal phase, or a Running pod whose Ray container ended
    and will never restart, is deleted (and replaced); the reason says why, in upstream's words."""
    current = phase(p)
    name = pod_name(p)
    if current in ("Failed", "Succeeded"):
        return True, (
            f"The {node_type} Pod {name} status is {current} which is a terminal state. "
            "KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."
        )
    terminated = ray_container_terminated(p)
    policy = p.get("spec", {}).get("restartPolicy") or ""
    if current == "Running" and terminated is not None:
        detail = f"The Pod status of the {node_type} Pod {name} is {current}, and the Ray container terminated status is {dict(terminated)}. "
        if policy == "Never":
            return True, detail + (
                f"The container is unable to restart due to its restart policy {policy}, so KubeRay will delete it."
            )
        return False, detail + (
            f"However, KubeRay will not delete the Pod because its restartPolicy is set to {policy} and it "
            "should be able to restart automatically."
        )
    return False, (
        f"KubeRay does not need to delete the {node_type} Pod {name}. The Pod status is {current}, and the Ray "
        f"container terminated status is {terminated}."
    )


def pod_summary(p: Obj) -> str:
    terminated = ray_container_terminated(p)
    return (
        f"Pod status: {phase(p)}; Pod restart policy: {p.get('spec', {}).get('restartPolicy') or ''}; "
        f"Ray container terminated status: {dict(terminated) if terminated is not None else None}"
    )
