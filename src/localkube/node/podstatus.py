"""A process-mode pod's status rendered from the kubelet's per-container state: a pure module (no I/O, no
clock: the caller passes the time stamp), as `simulate.py` is for the simulated node.

Shapes are the kubelet's: phase, conditions with transition times (a condition keeps its time until its
value changes), container states with lastState, restartCount, ready and started; a container waiting for
its restart shows CrashLoopBackOff with the kubelet's back-off message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesemantics import goparse
from kubesemantics.conditions import transition_time
from localkube.node.kubelet import scheduled_condition
from localkube.node.simulate import pod_condition, qos_class, uninitialized_message, unready_message
from localkube.node.supervision import ContainerState

# Each condition as the last status written had it, whose transition time the next keeps while its status holds.
Transitions = Mapping[str, dict[str, Any]]


@dataclass(frozen=True)
class PodView:
    """What a pod's status says about the pod itself, beside its containers."""

    name: str
    namespace: str
    uid: str
    ip: str
    host_ip: str
    started_at: str
    sandbox_ready: bool


def failed(containers: Sequence[ContainerState]) -> bool:
    """An init container failed for good: the pod is Failed and nothing more starts."""
    return any(c.init and c.done and not c.succeeded for c in containers)


def started(container: ContainerState) -> bool:
    run = container.run
    if run is None or run.setup is not None or run.post_start is not None:
        return False  # started once set up (its mounts made) and once its postStart hook has run
    startup = run.probes.get("startup")
    return startup is None or startup.result is True


def ready(container: ContainerState) -> bool:
    run = container.run
    if run is None or run.stop_deadline is not None or not started(container):
        return False
    readiness = run.probes.get("readiness")
    return readiness is None or readiness.result is True


def phase(containers: Sequence[ContainerState]) -> str:
    inits = [c for c in containers if c.init]
    apps = [c for c in containers if not c.init]
    if failed(containers):
        return "Failed"
    if not all(c.succeeded for c in inits) or any(c.run is None and c.terminated is None for c in apps):
        return "Pending"
    if any(c.run is not None for c in apps) or not all(c.done for c in apps):
        return "Running"
    return "Succeeded" if all(c.succeeded for c in apps) else "Failed"


def addresses(host_ip: str, pod_ip: str) -> dict[str, Any]:
    return {"hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}


def go_duration(seconds: float) -> str:
    """A duration as Go prints it ("10s", "2m40s", "5m0s", "500ms")."""
    return f"{round(seconds * 1000)}ms" if seconds < 1 else goparse.format_seconds(round(seconds))


def container_status(view: PodView, container: ContainerState, initialized: bool) -> dict[str, Any]:
    run = container.run
    last: dict[str, Any] = {}
    if run is not None:
        current: dict[str, Any] = {"running": {"startedAt": run.started_at}}
        if container.terminated is not None:
            last = {"terminated": container.terminated}
    elif container.waiting is not None:
        reason, message = container.waiting
        current = {"waiting": {"reason": reason, "message": message}}
    elif container.terminated is not None and container.done:
        current = {"terminated": container.terminated}
    elif container.terminated is not None:
        message = (
            f"back-off {go_duration(container.delay)} restarting failed container={container.name} "
            f"pod={view.name}_{view.namespace}({view.uid})"
        )
        current = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
        last = {"terminated": container.terminated}
    else:
        creating = not container.init and initialized
        current = {"waiting": {"reason": "ContainerCreating" if creating else "PodInitializing"}}
    entry: dict[str, Any] = {
        "name": container.name,
        "image": container.spec.get("image", ""),
        "imageID": "",
        "ready": ready(container),
        "restartCount": max(container.runs - 1, 0),
        "started": started(container),
        "state": current,
        "lastState": last,
    }
    container_id = run.container_id if run is not None else (container.terminated or {}).get("containerID")
    if container_id:
        entry["containerID"] = container_id
    return entry


def pod_status(
    view: PodView,
    containers: Sequence[ContainerState],
    pod: dict[str, Any],
    transitions: Transitions,
    stamp: str,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The pod's status at time `stamp`, and the conditions' transitions to pass in next time."""
    after = dict(transitions)

    def condition(kind: str, ok: bool, reason: str = "", message: str = "") -> dict[str, Any]:
        since = transition_time(after.get(kind), "True" if ok else "False", stamp)
        after[kind] = pod_condition(kind, ok, since, reason, message)
        return dict(after[kind])  # the status's own copy: what is kept for next time stays as written

    inits = [c for c in containers if c.init]
    apps = [c for c in containers if not c.init]
    initialized = all(c.succeeded for c in inits)
    current = phase(containers)
    unready = [c.name for c in apps if not ready(c)]
    ready_reason = "PodCompleted" if current == "Succeeded" else "ContainersNotReady"
    ready_message = "" if current == "Succeeded" else unready_message(unready)
    conditions = [
        condition("PodReadyToStartContainers", view.sandbox_ready),
        condition(
            "Initialized",
            initialized,
            "ContainersNotInitialized",
            uninitialized_message(c.name for c in inits if not c.succeeded),
        ),
        condition("Ready", not unready, ready_reason, ready_message),
        condition("ContainersReady", not unready, ready_reason, ready_message),
        scheduled_condition(pod) or pod_condition("PodScheduled", True, view.started_at),
    ]
    status: dict[str, Any] = {
        "phase": current,
        "conditions": conditions,
        **addresses(view.host_ip, view.ip),
        "startTime": view.started_at,
        "qosClass": qos_class(pod),
    }
    if inits:
        status["initContainerStatuses"] = [container_status(view, c, initialized) for c in inits]
    status["containerStatuses"] = [container_status(view, c, initialized) for c in apps]
    return status, after
