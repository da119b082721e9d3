"""The scheduler: binds each new pod to a node it fits, or says why none fits.

A bind sets `spec.nodeName` and the `PodScheduled=True` condition in one write, as the binding
subresource does. A pod no node fits stays Pending with `PodScheduled=False`, reason `Unschedulable` and
kube-scheduler's message; it is tried again whenever a bound pod goes away or ends (resources freed), and
every few seconds in case a node changed. Pods naming another `schedulerName` are left alone, as
kube-scheduler leaves them to their own scheduler.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from localkube.controllers.scheduling import (
    NodeUsage,
    holds_resources,
    misfit,
    pod_requests,
    unschedulable_message,
)
from localkube.storage import Event, Store

PODS_PREFIX = "/registry/core/pods/"
NODES_PREFIX = "/registry/core/nodes/"
DEFAULT_SCHEDULER = "default-scheduler"
UNSCHEDULABLE_RETRY = 5.0


class Scheduler:
    name = "scheduler"
    prefixes = (PODS_PREFIX, NODES_PREFIX)

    def __init__(self, store: Store) -> None:
        self._store = store
        self._nodes: dict[str, dict[str, Any]] = {}
        self._usage: dict[str, NodeUsage] = {}
        # What each bound pod that holds resources counts for, so that a change can be undone exactly.
        self._holding: dict[str, tuple[str, dict[str, Fraction]]] = {}  # pod key -> (node, requests)
        self._waiting: set[str] = set()

    def observe(self, event: Event) -> Iterable[str]:
        if event.key.startswith(NODES_PREFIX):
            name = event.key.removeprefix(NODES_PREFIX)
            if event.type == "DELETED":
                self._nodes.pop(name, None)
            else:
                self._nodes[name] = event.object
            return list(self._waiting)
        pod = event.object
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self._waiting.discard(event.key)
            held = self._holding.pop(event.key, None)
            if held is not None:
                self._usage_of(held[0]).add(held[1], -1)
            if event.type != "DELETED" and holds_resources(pod):
                requests = pod_requests(pod)
                self._holding[event.key] = (node, requests)
                self._usage_of(node).add(requests)
                return []
            return list(self._waiting) if held is not None else []
        if event.type == "DELETED":
            self._waiting.discard(event.key)
            return []
        return [event.key] if _wants_us(pod) else []

    def reconcile(self, key: str) -> float | None:
        pod = self._store.get(key)
        if pod is None or (pod.get("spec") or {}).get("nodeName") or not _wants_us(pod):
            self._waiting.discard(key)
            return None
        reasons = {
            name: misfit(pod, node, self._usage_of(name)) for name, node in sorted(self._nodes.items())
        }
        chosen = next((name for name, why in reasons.items() if not why), None)
        if chosen is None:
            self._waiting.add(key)
            message = unschedulable_message(reasons)
            _set_condition(pod, "False", "Unschedulable", message)
            pod.setdefault("status", {})["phase"] = "Pending"
            if pod != self._store.get(key):
                self._store.update(key, pod, int(pod["metadata"]["resourceVersion"]))
            return UNSCHEDULABLE_RETRY
        self._waiting.discard(key)
        pod["spec"]["nodeName"] = chosen
        _set_condition(pod, "True")
        pod.setdefault("status", {}).setdefault("phase", "Pending")
        self._store.update(key, pod, int(pod["metadata"]["resourceVersion"]))
        return None

    def _usage_of(self, node: str) -> NodeUsage:
        return self._usage.setdefault(node, NodeUsage())


def _wants_us(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    return (
        not (pod.get("metadata") or {}).get("deletionTimestamp")
        and spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
        and holds_resources(pod)
    )


def _set_condition(pod: dict[str, Any], status: str, reason: str = "", message: str = "") -> None:
    conditions = [
        c for c in pod.setdefault("status", {}).get("conditions") or [] if c.get("type") != "PodScheduled"
    ]
    previous = next(
        (c for c in pod["status"].get("conditions") or [] if c.get("type") == "PodScheduled"), None
    )  # keep the transition time while the status stays the same
    condition: dict[str, Any] = {"type": "PodScheduled", "status": status, "lastProbeTime": None}
    if previous is not None and previous.get("status") == status:
        condition["lastTransitionTime"] = previous.get("lastTransitionTime")
    else:
        condition["lastTransitionTime"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if reason:
        condition["reason"] = reason
        condition["message"] = message
    pod["status"]["conditions"] = [*conditions, condition]
