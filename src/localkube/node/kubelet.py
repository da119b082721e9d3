"""The simulated kubelet of one node: registers the Node, plays the lifecycle of the pods bound to it and
finishes their deletion.

Status comes from `simulate.pod_status`, a pure function of the pod and the time since this kubelet
admitted it, so a recheck that finds nothing new writes nothing. Pod addresses come from a pool in the
loopback range (127.244.0.0/16): a simulated pod runs no process, and a client that dials its address
reaches nothing but this machine. The annotation `localkube.io/pod-ip` pins a pod's address instead (it
must be a loopback address or another of this machine's own): a test can point a simulated pod at a real
server it started there, such as a Ray head's dashboard reached through the API server's service proxy (the
real kube-apiserver's proxies only to a global unicast address, and its EndpointSlices refuse loopback).
Deleting a pod bound here completes at once (nothing to stop); a pod that still has finalizers waits for them
and is removed on the next change.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesemantics import times
from kubesemantics.conditions import find_condition
from localkube.node.network import LOOPBACK_PODS, AddressPool
from localkube.node.simulate import Placement, SimulationError, Timing, pod_status
from localkube.storage import Event
from localkube.storage.view import StoreView

PODS_PREFIX = "/registry/core/pods/"
NODES_PREFIX = "/registry/core/nodes/"
POD_NETWORK = LOOPBACK_PODS
POD_IP_ANNOTATION = "localkube.io/pod-ip"

# A simulated node is large enough for every sample and benchmark (benchmarks.scale at 10,000 clusters:
# 40,000 pods of 100m CPU and 128-256 Mi); accelerators included so that GPU and TPU pods schedule too.
DEFAULT_CAPACITY: Mapping[str, str] = {
    "cpu": "10k",
    "memory": "16Ti",
    "ephemeral-storage": "10Ti",
    "pods": "100k",
    "nvidia.com/gpu": "1k",
    "amd.com/gpu": "1k",
    "google.com/tpu": "1k",
    "aws.amazon.com/neuroncore": "1k",
    "habana.ai/gaudi": "1k",
}


@dataclass(frozen=True)
class NodeOptions:
    name: str = "localkube"
    host_ip: str = "127.0.0.1"
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    labels: Mapping[str, str] = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)
    runtime: str = "localkube://simulated"  # the Node's containerRuntimeVersion


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def node_object(options: NodeOptions, now: datetime.datetime) -> dict[str, Any]:
    """The Node as its kubelet registers it."""
    stamp = times.format_time(now)
    labels = {
        "kubernetes.io/hostname": options.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "localkube",
        **options.labels,
    }
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": options.name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": dict(options.capacity),
            "allocatable": dict(options.capacity),
            "addresses": [
                {"type": "InternalIP", "address": options.host_ip},
                {"type": "Hostname", "address": options.name},
            ],
            "conditions": [
                {
                    "type": t,
                    "status": s,
                    "reason": r,
                    "message": m,
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
                for t, s, r, m in conditions
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "v1.32.0-localkube",
                "containerRuntimeVersion": options.runtime,
            },
        },
    }


def register_node(
    store: StoreView, options: NodeOptions, create: Callable[[dict[str, Any]], object], now: datetime.datetime
) -> None:
    """Creates the node's Node object through the API's create path unless it exists, then writes its status
    (capacity, allocatable, addresses, conditions) as a kubelet does: a create through the API drops status."""
    key = NODES_PREFIX + options.name
    if store.get(key) is None:
        create(node_object(options, now))
    node = store.get(key)
    if node is not None and not node.get("status"):
        status = node_object(options, now)["status"]
        store.update(key, {**node, "status": status}, int(node["metadata"]["resourceVersion"]))


def finish_deletion(store: StoreView, key: str, pod: dict[str, Any]) -> None:
    """Removes a terminating pod whose processes are gone, unless finalizers still hold it (a later change
    of the pod brings it back here)."""
    metadata = pod["metadata"]
    if not metadata.get("finalizers"):
        store.delete(key, int(metadata["resourceVersion"]))


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The PodScheduled condition the scheduler wrote, which a kubelet keeps as it is."""
    return find_condition((pod.get("status") or {}).get("conditions") or [], "PodScheduled")


class SimulatedKubelet:
    """The kubelet of one simulated node (see the module docstring)."""

    name = "kubelet"
    prefixes = (PODS_PREFIX,)

    def __init__(
        self, store: StoreView, options: NodeOptions, clock: Callable[[], datetime.datetime] = _now
    ) -> None:
        self._store = store
        self._options = options
        self._clock = clock
        self._admitted: dict[str, datetime.datetime] = {}
        # The revision of the status this kubelet last wrote per pod: that write's own event needs no
        # second look (the status is what was just computed, and its recheck is already scheduled).
        self._written: dict[str, int] = {}
        self._addresses = AddressPool(POD_NETWORK)

    @property
    def node_options(self) -> NodeOptions:
        return self._options

    def register(self, create: Callable[[dict[str, Any]], object]) -> None:
        """Creates this kubelet's Node through the API's create path unless it exists."""
        register_node(self._store, self._options, create, self._clock())

    def observe(self, event: Event) -> Iterable[str]:
        pod = event.object
        if (pod.get("spec") or {}).get("nodeName") != self._options.name:
            return []
        if event.type == "DELETED":
            self._admitted.pop(event.key, None)
            self._written.pop(event.key, None)
            self._addresses.release(event.key)
            return []
        if self._written.get(event.key) == event.revision:
            return []
        address = (pod.get("status") or {}).get("podIP")
        if address:
            self._addresses.assign(event.key, address)  # kept across a restart of localkube
        return [event.key]

    def reconcile(self, key: str) -> float | None:
        pod = self._store.get(key)
        if pod is None or (pod.get("spec") or {}).get("nodeName") != self._options.name:
            return None
        metadata = pod["metadata"]
        if metadata.get("deletionTimestamp"):
            finish_deletion(self._store, key, pod)
            return None
        started = self._admitted.setdefault(key, _start_time(pod) or self._clock())
        placement = Placement(self._options.name, self._options.host_ip, self._address(key, pod))
        try:
            outcome = pod_status(pod, placement, started, self._clock(), self._options.timing)
        except SimulationError:
            return None  # an annotation we do not understand: the pod stays as it is
        status = dict(outcome.status)
        scheduled = scheduled_condition(pod)
        if scheduled:
            status["conditions"] = [
                c if c.get("type") != "PodScheduled" else scheduled for c in status["conditions"]
            ]
        if status != pod.get("status"):
            written = self._store.replace(key, {**pod, "status": status}, int(metadata["resourceVersion"]))
            if written is not None:
                self._written[key] = written
        return outcome.recheck_after

    def _address(self, key: str, pod: dict[str, Any]) -> str:
        """The pod's address: pinned by annotation, else kept for its lifetime, the next free one of the pool
        for a new pod."""
        pinned = str(((pod.get("metadata") or {}).get("annotations") or {}).get(POD_IP_ANNOTATION) or "")
        if pinned and _of_this_machine(pinned):
            self._addresses.pin(key, pinned)
            return pinned
        return self._addresses.assign(key)


@functools.cache
def _of_this_machine(address: str) -> bool:
    """A loopback address, or one a socket here can bind: a pinned pod still reaches this machine alone."""
    ip = ipaddress.ip_address(address)
    if ip.is_loopback:
        return True
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


def _start_time(pod: dict[str, Any]) -> datetime.datetime | None:
    started = (pod.get("status") or {}).get("startTime")
    return times.parse_time(started) if started else None
