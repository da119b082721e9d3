"""The scheduler: binds each new pod to a node it fits, or says why none fits.

A bind goes through the `pods/binding` subresource's own code (localkube.server.binding), admission
included, as kube-scheduler POSTs a Binding: while no webhook sees bindings it is one write at once
(`spec.nodeName`, the `PodScheduled=True` condition); while some do, the pod is assumed on its node (what it
requests counted there, so the next pod is not placed on the same room) and bound in the background, as
kube-scheduler's binding cycle runs; a binding admission refuses is forgotten, the pod marked
`PodScheduled=False` reason `SchedulerError` with the refusal, and tried again after a pause. A pod no node fits stays Pending with `PodScheduled=False`, reason `Unschedulable` and
kube-scheduler's message; it is tried again whenever a bound pod goes away or ends (resources freed), and
every few seconds in case a node changed.

It stands in for the schedulers named in `schedulers` (localkube's `--schedulers`; by default only
`default-scheduler`). Pods naming any other `schedulerName` are left alone and stay Pending, as on a cluster
where that scheduler does not run. For `volcano` and `scheduler-plugins-scheduler` it schedules gangs
(`gang`): a PodGroup's pods are bound together once `minMember` of them fit, and the PodGroup's phase is
recorded.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from kubesemantics import times
from kubesemantics.conditions import find_condition, transition_time
from localkube.controllers import gang
from localkube.controllers.scheduling import (
    NodeUsage,
    holds_resources,
    misfit,
    pod_requests,
    unschedulable_message,
)
from localkube.server.binding import Binder, assign
from localkube.server.errors import ApiError
from localkube.server.rbac import UserInfo
from localkube.storage import Event, Store

log = logging.getLogger(__name__)

PODS_PREFIX = "/registry/core/pods/"
NODES_PREFIX = "/registry/core/nodes/"
DEFAULT_SCHEDULER = "default-scheduler"
UNSCHEDULABLE_RETRY = 5.0
# Who the bindings are made by, as admission webhooks are told.
SCHEDULER_USER = UserInfo("system:kube-scheduler", ("system:authenticated",))


class Scheduler:
    name = "scheduler"

    def __init__(
        self, store: Store, schedulers: Iterable[str] = (DEFAULT_SCHEDULER,), binder: Binder | None = None
    ) -> None:
        self._store = store
        self._binder = binder
        # Pods assumed on a node while their binding is admitted, and when a refused one may be tried again.
        self._binding: dict[str, asyncio.Task[None]] = {}
        self._refused: dict[str, float] = {}
        self._names = frozenset(schedulers)
        self._gangs = {name: g for name, g in gang.GANGS.items() if name in self._names}
        self.prefixes = (PODS_PREFIX, NODES_PREFIX, *(g.group_prefix for g in self._gangs.values()))
        self._nodes: dict[str, dict[str, Any]] = {}
        self._usage: dict[str, NodeUsage] = {}
        # What each bound pod that holds resources counts for, so that a change can be undone exactly.
        self._holding: dict[str, tuple[str, dict[str, Fraction]]] = {}  # pod key -> (node, requests)
        self._waiting: set[str] = set()

    def observe(self, event: Event) -> Iterable[str]:
        if not event.key.startswith(PODS_PREFIX) and not event.key.startswith(NODES_PREFIX):
            return list(self._waiting)  # a PodGroup changed: its pods may fit now
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
            held = self._holding.get(event.key)
            if held is not None and held[0] == node and event.type != "DELETED" and holds_resources(pod):
                # A status change of a pod still running where it was bound: a bound pod's requests
                # cannot change (no in-place resize here), so what it holds stands without parsing them again.
                return []
            self._holding.pop(event.key, None)
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
        return [event.key] if self._wants_us(pod) else []

    def reconcile(self, key: str) -> float | None:
        pod = self._store.get(key)
        if pod is None or (pod.get("spec") or {}).get("nodeName") or not self._wants_us(pod):
            self._waiting.discard(key)
            self._refused.pop(key, None)
            return None
        if key in self._binding:
            return UNSCHEDULABLE_RETRY
        pause = self._refused.get(key, 0.0) - time.monotonic()
        if pause > 0:
            return pause
        gang_of = self._gangs.get(pod["spec"].get("schedulerName", DEFAULT_SCHEDULER))
        if gang_of is not None and gang_of.group_of(pod):
            return self._reconcile_gang(gang_of, pod)
        reasons = self._misfits(pod, self._usage)
        chosen = next((name for name, why in reasons.items() if not why), None)
        if chosen is None:
            self._unschedulable(key, pod, unschedulable_message(reasons))
            return UNSCHEDULABLE_RETRY
        self._bind(key, pod, chosen)
        return None

    def _wants_us(self, pod: dict[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        return (
            not (pod.get("metadata") or {}).get("deletionTimestamp")
            and spec.get("schedulerName", DEFAULT_SCHEDULER) in self._names
            and holds_resources(pod)
        )

    def _misfits(self, pod: dict[str, Any], usage: dict[str, NodeUsage]) -> dict[str, list[str]]:
        return {
            name: misfit(pod, node, usage.setdefault(name, NodeUsage()))
            for name, node in sorted(self._nodes.items())
        }

    def _unschedulable(
        self, key: str, pod: dict[str, Any], message: str, reason: str = "Unschedulable"
    ) -> None:
        self._waiting.add(key)
        _set_condition(pod, "False", reason, message)
        pod.setdefault("status", {})["phase"] = "Pending"
        if pod != self._store.get(key):
            self._store.replace(key, pod, int(pod["metadata"]["resourceVersion"]))

    def _bind(self, key: str, pod: dict[str, Any], node: str) -> None:
        self._waiting.discard(key)
        metadata = pod["metadata"]
        binding = {
            "metadata": {
                "name": metadata["name"],
                "namespace": metadata["namespace"],
                "uid": metadata.get("uid"),
            },
            "target": {"kind": "Node", "name": node},
        }
        binder = self._binder
        if binder is None or binder.pods is None:
            # No REST layer (the scheduler's own unit tests): what the binding writes, written here.
            pod["spec"]["nodeName"] = node
            _set_condition(pod, "True")
            pod.setdefault("status", {}).setdefault("phase", "Pending")
            self._store.replace(key, pod, int(metadata["resourceVersion"]))
            return
        if not binder.admitted():
            assign(binder.resources, binder.pods, metadata["namespace"], metadata["name"], binding)
            return
        # Assumed: what it requests is held on `node` until the binding lands or is refused.
        requests = pod_requests(pod)
        self._holding[key] = (node, requests)
        self._usage_of(node).add(requests)
        self._binding[key] = asyncio.get_running_loop().create_task(self._admit(key, binding))

    async def _admit(self, key: str, binding: dict[str, Any]) -> None:
        assert self._binder is not None and self._binder.pods is not None
        metadata = binding["metadata"]
        try:
            await self._binder.create(
                self._binder.pods, metadata["namespace"], metadata["name"], binding, SCHEDULER_USER
            )
        except Exception as failed:  # a refusal (ApiError) or anything else: the assumption must not stay
            why = failed.message if isinstance(failed, ApiError) else repr(failed)
            log.info("binding %s/%s failed: %s", metadata["namespace"], metadata["name"], why)
            held = self._holding.pop(key, None)
            if held is not None:
                self._usage_of(held[0]).add(held[1], -1)
            self._refused[key] = time.monotonic() + UNSCHEDULABLE_RETRY
            pod = self._store.get(key)
            if pod is not None and not (pod.get("spec") or {}).get("nodeName"):
                self._unschedulable(key, pod, f'running Bind plugin "DefaultBinder": {why}', "SchedulerError")
        finally:
            self._binding.pop(key, None)

    def _reconcile_gang(self, kind: gang.Gang, pod: dict[str, Any]) -> float | None:
        """Binds the pending pods of `pod`'s group if, with those bound, at least minMember fit."""
        namespace, name = pod["metadata"]["namespace"], kind.group_of(pod)
        pods_prefix = f"{PODS_PREFIX}{namespace}/"
        members = [
            (pods_prefix + p["metadata"]["name"], p)
            for p in self._store.list(pods_prefix)[0]
            if kind.group_of(p) == name
            and self._wants_us(p)
            and p["spec"].get("schedulerName") == kind.scheduler
        ]
        group_key = kind.group_key(namespace, name)
        group = self._store.get(group_key)
        if group is None:
            for key, member in members:
                if not member["spec"].get("nodeName"):
                    self._unschedulable(key, member, f"pod group {namespace}/{name} not found")
            return UNSCHEDULABLE_RETRY
        bound = sum(1 for _, p in members if p["spec"].get("nodeName"))
        # Place the pending members one after another on a copy of the nodes' usage.
        usage = {n: NodeUsage(defaultdict(Fraction, u.requests), u.pods) for n, u in self._usage.items()}
        placed: list[tuple[str, dict[str, Any], str]] = []
        unplaced: list[tuple[str, dict[str, Any], str]] = []
        for key, member in sorted(
            (m for m in members if not m[1]["spec"].get("nodeName")), key=lambda m: m[0]
        ):
            reasons = self._misfits(member, usage)
            chosen = next((n for n, why in reasons.items() if not why), None)
            if chosen is None:
                unplaced.append((key, member, unschedulable_message(reasons)))
            else:
                usage[chosen].add(pod_requests(member))
                placed.append((key, member, chosen))
        wanted = gang.min_member(group)
        if bound + len(placed) < wanted:
            message = gang.not_ready_message(namespace, name, bound + len(placed), wanted)
            for key, member, _ in (*placed, *unplaced):
                self._unschedulable(key, member, message)
            self._set_phase(group_key, group, "Pending")
            return UNSCHEDULABLE_RETRY
        for key, member, node in placed:
            self._bind(key, member, node)
        for key, member, message in unplaced:
            self._unschedulable(key, member, message)
        self._set_phase(group_key, group, kind.bound_phase)
        return UNSCHEDULABLE_RETRY if unplaced else None

    def _set_phase(self, key: str, group: dict[str, Any], phase: str) -> None:
        status = group.setdefault("status", {})
        if status.get("phase") != phase:
            status["phase"] = phase
            self._store.replace(key, group, int(group["metadata"]["resourceVersion"]))

    def _usage_of(self, node: str) -> NodeUsage:
        return self._usage.setdefault(node, NodeUsage())


def _set_condition(pod: dict[str, Any], status: str, reason: str = "", message: str = "") -> None:
    conditions = [
        c for c in pod.setdefault("status", {}).get("conditions") or [] if c.get("type") != "PodScheduled"
    ]
    previous = find_condition(pod["status"].get("conditions") or [], "PodScheduled")
    now = times.format_time(datetime.datetime.now(datetime.UTC))
    condition: dict[str, Any] = {
        "type": "PodScheduled",
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": transition_time(previous, status, now),
    }
    if reason:
        condition["reason"] = reason
        condition["message"] = message
    pod["status"]["conditions"] = [*conditions, condition]
