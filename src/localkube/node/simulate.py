"""Simulated kubelet: the status a pod would have at a given moment, as a pure function of time.

The node agent in `simulate` mode binds a pod, remembers when it first saw it, and calls `pod_status`
whenever the pod changes or the returned `recheck_after` elapses. Everything here is deterministic: the
same pod, start time and clock give the same status, so a status written twice is identical and the agent
writes only real changes.

Lifecycle (KWOK-like stages, each with a configurable delay in `Timing`):
  Pending/ContainerCreating --pull--> Running (not ready) --ready--> Running, Ready
  and, for a Job's pods (restartPolicy Never or OnFailure), --complete--> Succeeded (exit 0).

Failures are injected per pod with the annotation `localkube.io/simulate` (usually set through a
template's metadata); values are those a kubelet really reports:
  ImagePullBackOff   Pending; containers waiting ErrImagePull, then ImagePullBackOff.
  CrashLoopBackOff   containers run 1 s and exit 1; restarts follow the kubelet's back-off (10 s doubling,
                     capped at 300 s) and the waiting reason between runs is CrashLoopBackOff.
  OOMKilled          like a crash, but the termination is reason OOMKilled, exit code 137.
  Exit:<code>        containers exit with <code> after running 1 s (restart rules as above; a pod that
                     does not restart ends Succeeded for 0 and Failed otherwise).
  Evicted            phase Failed, reason Evicted, with the kubelet's memory-pressure message.
  NeverReady         Running, but readiness never passes (Ready False, ContainersNotReady).
  Delay:<seconds>    the pod stays ContainerCreating that much longer before it starts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubesemantics import times
from localkube.node.errors import NodeError

SIMULATE_ANNOTATION = "localkube.io/simulate"

# The kubelet's container restart back-off.
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0
# How long an injected failing container runs before it exits.
CRASH_RUN_SECONDS = 1.0
# ErrImagePull is reported for this long before the kubelet switches to ImagePullBackOff.
IMAGE_PULL_ERROR_SECONDS = 2.0


class SimulationError(NodeError, ValueError):
    """The `localkube.io/simulate` annotation has a value this agent does not know."""


@dataclass(frozen=True)
class Timing:
    """Stage delays in seconds (all zero: a pod is Running and Ready as soon as it is bound)."""

    pull: float = 0.0
    ready: float = 0.0
    complete: float = 0.0


@dataclass(frozen=True)
class Placement:
    """Where the pod runs: the node's name and address and the pod's own address."""

    node_name: str
    host_ip: str
    pod_ip: str


@dataclass(frozen=True)
class Outcome:
    """The pod's status now, and in how many seconds it would next change (None: never by itself)."""

    status: dict[str, Any]
    recheck_after: float | None


@dataclass(frozen=True)
class _Fault:
    kind: str  # "", ImagePullBackOff, Crash, Evicted, NeverReady
    exit_code: int = 0
    reason: str = ""
    delay: float = 0.0


def _owned_by_job(pod: dict[str, Any]) -> bool:
    references = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("kind") == "Job" and ref.get("controller") for ref in references)


def parse_fault(value: str | None) -> _Fault:
    """Reads the annotation; raises SimulationError naming the value when it is not understood."""
    if not value:
        return _Fault("")
    if value in ("ImagePullBackOff", "Evicted", "NeverReady"):
        return _Fault(value)
    if value == "CrashLoopBackOff":
        return _Fault("Crash", exit_code=1, reason="Error")
    if value == "OOMKilled":
        return _Fault("Crash", exit_code=137, reason="OOMKilled")
    head, _, arg = value.partition(":")
    try:
        if head == "Exit":
            code = int(arg)
            return _Fault("Crash", exit_code=code, reason="Completed" if code == 0 else "Error")
        if head == "Delay":
            return _Fault("", delay=float(arg))
    except ValueError:
        pass
    raise SimulationError(
        f"{SIMULATE_ANNOTATION}: unsupported value {value!r}: expected ImagePullBackOff, CrashLoopBackOff, "
        "OOMKilled, Evicted, NeverReady, Exit:<code> or Delay:<seconds>"
    )


def pod_status(
    pod: dict[str, Any], placement: Placement, started: datetime, now: datetime, timing: Timing
) -> Outcome:
    """The status a kubelet would report for `pod` at `now`, the agent having admitted it at `started`."""
    annotations = pod.get("metadata", {}).get("annotations") or {}
    fault = parse_fault(annotations.get(SIMULATE_ANNOTATION))
    spec = pod.get("spec", {})
    restart_policy = spec.get("restartPolicy", "Always")
    # Only a Job's pods run to completion by themselves; any other pod (a Ray pod with restartPolicy Never,
    # as autoscaler v2 sets) runs until it is deleted or a fault ends it.
    completes = restart_policy != "Always" and _owned_by_job(pod)
    elapsed = max((now - started).total_seconds(), 0.0)
    sim = _Simulation(pod, placement, started, timing)

    if fault.kind == "Evicted":
        return Outcome(sim.evicted(), None)
    start_at = timing.pull + fault.delay
    if fault.kind == "ImagePullBackOff":
        reason = "ErrImagePull" if elapsed < IMAGE_PULL_ERROR_SECONDS else "ImagePullBackOff"
        recheck = IMAGE_PULL_ERROR_SECONDS - elapsed if elapsed < IMAGE_PULL_ERROR_SECONDS else None
        return Outcome(sim.pending(reason), recheck)
    if elapsed < start_at:
        return Outcome(sim.pending("ContainerCreating"), start_at - elapsed)
    run_for = elapsed - start_at
    if fault.kind == "Crash":
        return sim.crashing(fault, restart_policy, run_for)
    if completes and run_for >= timing.complete:
        return Outcome(sim.terminated("Succeeded", 0, "Completed", timing.complete), None)
    if fault.kind == "NeverReady" or run_for < timing.ready:
        recheck = None if fault.kind == "NeverReady" else timing.ready - run_for
        if completes:
            recheck = (
                timing.complete - run_for if recheck is None else min(recheck, timing.complete - run_for)
            )
        return Outcome(sim.running(ready=False), recheck)
    recheck_done = timing.complete - run_for if completes else None
    return Outcome(sim.running(ready=True), recheck_done)


class _Simulation:
    """Builds the status documents for one pod; every timestamp is derived from `started`."""

    def __init__(self, pod: dict[str, Any], placement: Placement, started: datetime, timing: Timing) -> None:
        self.pod = pod
        self.placement = placement
        self.started = started
        self.timing = timing
        spec = pod.get("spec", {})
        self.containers: list[dict[str, Any]] = spec.get("containers", [])
        self.init_containers: list[dict[str, Any]] = spec.get("initContainers", [])

    def _time(self, offset: float = 0.0) -> str:
        return times.format_time(self.started + timedelta(seconds=offset))

    def _container_id(self, name: str, restart: int = 0) -> str:
        digest = hashlib.sha256(f"{self.pod.get('metadata', {}).get('uid', '')}/{name}/{restart}".encode())
        return "containerd://" + digest.hexdigest()

    def _base(self, phase: str) -> dict[str, Any]:
        status: dict[str, Any] = {
            "phase": phase,
            "hostIP": self.placement.host_ip,
            "hostIPs": [{"ip": self.placement.host_ip}],
            "startTime": self._time(),
            "qosClass": qos_class(self.pod),
        }
        if phase != "Pending" or self.timing.pull == 0:
            status["podIP"] = self.placement.pod_ip
            status["podIPs"] = [{"ip": self.placement.pod_ip}]
        return status

    def _conditions(
        self, *, initialized: bool, ready: bool, reason: str = "", sandbox: bool = True
    ) -> list[dict[str, Any]]:
        def condition(kind: str, ok: bool, why: str = "") -> dict[str, Any]:
            message = (
                unready_message(c["name"] for c in self.containers) if why == "ContainersNotReady" else ""
            )
            return pod_condition(kind, ok, self._time(), why, message)

        return [
            condition("PodReadyToStartContainers", sandbox),
            condition("Initialized", initialized, "PodCompleted" if reason == "PodCompleted" else ""),
            condition("Ready", ready, reason or "ContainersNotReady"),
            condition("ContainersReady", ready, reason or "ContainersNotReady"),
            condition("PodScheduled", True),
        ]

    def _status_of(
        self,
        container: dict[str, Any],
        state: dict[str, Any],
        *,
        ready: bool = False,
        restarts: int = 0,
        last_state: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        image = container.get("image", "")
        entry: dict[str, Any] = {
            "name": container["name"],
            "image": image,
            "imageID": ""
            if "waiting" in state
            else f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
            "ready": ready,
            "restartCount": restarts,
            "started": "running" in state,
            "state": state,
            "lastState": last_state or {},
        }
        if "waiting" not in state or restarts:
            entry["containerID"] = self._container_id(container["name"], restarts)
        return entry

    def _init_statuses(self, done: bool) -> list[dict[str, Any]]:
        if done:
            state = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": self._time(),
                    "finishedAt": self._time(),
                }
            }
        else:
            state = {"waiting": {"reason": "PodInitializing"}}
        return [self._status_of(c, state) for c in self.init_containers]

    def _with_containers(
        self, status: dict[str, Any], statuses: list[dict[str, Any]], init_done: bool
    ) -> dict[str, Any]:
        if self.init_containers:
            status["initContainerStatuses"] = self._init_statuses(init_done)
        status["containerStatuses"] = statuses
        return status

    def pending(self, waiting_reason: str) -> dict[str, Any]:
        status = self._base("Pending")
        status["conditions"] = self._conditions(initialized=not self.init_containers, ready=False)
        waiting: dict[str, Any] = {"reason": waiting_reason}
        statuses = []
        for container in self.containers:
            state = dict(waiting)
            image = container.get("image", "")
            if waiting_reason == "ErrImagePull":
                state["message"] = (
                    f'failed to pull and unpack image "{image}": failed to resolve reference "{image}": not found'
                )
            elif waiting_reason == "ImagePullBackOff":
                state["message"] = f'Back-off pulling image "{image}"'
            statuses.append(self._status_of(container, {"waiting": state}))
        return self._with_containers(status, statuses, init_done=False)

    def running(self, *, ready: bool) -> dict[str, Any]:
        status = self._base("Running")
        status["conditions"] = self._conditions(initialized=True, ready=ready)
        started_at = self._time(self.timing.pull)
        statuses = [
            self._status_of(c, {"running": {"startedAt": started_at}}, ready=ready) for c in self.containers
        ]
        return self._with_containers(status, statuses, init_done=True)

    def terminated(self, phase: str, exit_code: int, reason: str, ran_for: float) -> dict[str, Any]:
        status = self._base(phase)
        status["conditions"] = self._conditions(
            initialized=True, ready=False, reason="PodCompleted" if phase == "Succeeded" else "PodFailed"
        )
        state = {"terminated": self._termination(exit_code, reason, self.timing.pull, ran_for)}
        statuses = [self._status_of(c, state) for c in self.containers]
        return self._with_containers(status, statuses, init_done=True)

    def _termination(self, exit_code: int, reason: str, start: float, ran_for: float) -> dict[str, Any]:
        return {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": self._time(start),
            "finishedAt": self._time(start + ran_for),
            "containerID": "",
        }

    def crashing(self, fault: _Fault, restart_policy: str, run_for: float) -> Outcome:
        restarts_allowed = restart_policy == "Always" or (
            restart_policy == "OnFailure" and fault.exit_code != 0
        )
        if not restarts_allowed:
            if run_for < CRASH_RUN_SECONDS:
                return Outcome(self.running(ready=False), CRASH_RUN_SECONDS - run_for)
            phase = "Succeeded" if fault.exit_code == 0 else "Failed"
            return Outcome(self.terminated(phase, fault.exit_code, fault.reason, CRASH_RUN_SECONDS), None)
        run = _crash_schedule(run_for)
        base = self.timing.pull
        status = self._base("Running")
        status["conditions"] = self._conditions(initialized=True, ready=False)
        meta = self.pod.get("metadata", {})
        statuses = []
        for container in self.containers:
            if run.running:
                state: dict[str, Any] = {"running": {"startedAt": self._time(base + run.start)}}
            else:
                message = (
                    f"back-off {int(run.backoff)}s restarting failed container={container['name']} "
                    f"pod={meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"
                )
                state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
            last: dict[str, Any] = {}
            if run.last_start is not None:
                ended = self._termination(
                    fault.exit_code, fault.reason, base + run.last_start, CRASH_RUN_SECONDS
                )
                last = {"terminated": ended}
            statuses.append(self._status_of(container, state, restarts=run.restarts, last_state=last))
        return Outcome(self._with_containers(status, statuses, init_done=True), run.next_change - run_for)

    def evicted(self) -> dict[str, Any]:
        status = self._base("Failed")
        status.pop("podIP", None)
        status.pop("podIPs", None)
        status["reason"] = "Evicted"
        status["message"] = (
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. "
        )
        status["conditions"] = [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "TerminationByKubelet",
                "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. ",
                "lastProbeTime": None,
                "lastTransitionTime": self._time(),
            },
            *self._conditions(initialized=True, ready=False, reason="PodFailed", sandbox=False),
        ]
        state = {"terminated": self._termination(137, "ContainerStatusUnknown", self.timing.pull, 0.0)}
        state["terminated"]["message"] = "The container could not be located when the pod was terminated"
        statuses = [self._status_of(c, state) for c in self.containers]
        return self._with_containers(status, statuses, init_done=True)


@dataclass(frozen=True)
class _CrashRun:
    restarts: int
    start: float  # when the current (or the last) run started, seconds after the first start
    running: bool
    backoff: float  # the wait after the current run
    last_start: float | None  # when the last finished run started
    next_change: float


def _crash_schedule(elapsed: float) -> _CrashRun:
    """Where a container that always exits after CRASH_RUN_SECONDS stands after `elapsed` seconds, under the
    kubelet's restart back-off (10 s, doubling, capped at 300 s)."""
    restarts, start, backoff = 0, 0.0, BACKOFF_INITIAL
    while start + CRASH_RUN_SECONDS + backoff <= elapsed:
        start += CRASH_RUN_SECONDS + backoff
        backoff = min(backoff * 2, BACKOFF_MAX)
        restarts += 1
    running = elapsed < start + CRASH_RUN_SECONDS
    if running:
        previous = None if restarts == 0 else start - _previous_backoff(restarts) - CRASH_RUN_SECONDS
        return _CrashRun(restarts, start, True, backoff, previous, start + CRASH_RUN_SECONDS)
    return _CrashRun(restarts, start, False, backoff, start, start + CRASH_RUN_SECONDS + backoff)


def _previous_backoff(restarts: int) -> float:
    """The wait that preceded run number `restarts` (counted from 0)."""
    return min(BACKOFF_INITIAL * 2.0 ** (restarts - 1), BACKOFF_MAX)


def qos_class(pod: dict[str, Any]) -> str:
    """Kubernetes' QoS class: Guaranteed when every container limits CPU and memory with requests equal to
    limits, BestEffort when nothing requests or limits anything, Burstable otherwise."""
    containers = [*pod.get("spec", {}).get("containers", []), *pod.get("spec", {}).get("initContainers", [])]
    any_set, guaranteed = False, True
    for container in containers:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = {**limits, **(resources.get("requests") or {})}
        if limits or requests:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or str(requests.get(name)) != str(limits[name]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_condition(
    kind: str, ok: bool, transition_time: str, reason: str = "", message: str = ""
) -> dict[str, Any]:
    """One entry of `status.conditions` as the kubelet writes it (a reason and message only when False)."""
    entry: dict[str, Any] = {
        "type": kind,
        "status": "True" if ok else "False",
        "lastProbeTime": None,
        "lastTransitionTime": transition_time,
    }
    if not ok and reason:
        entry["reason"] = reason
        if message:
            entry["message"] = message
    return entry


def unready_message(names: Iterable[str]) -> str:
    """The kubelet's message for ContainersNotReady (Go prints the list of names space-separated)."""
    return f"containers with unready status: [{' '.join(names)}]"


def uninitialized_message(names: Iterable[str]) -> str:
    """The kubelet's message for ContainersNotInitialized."""
    return f"containers with incomplete status: [{' '.join(names)}]"
