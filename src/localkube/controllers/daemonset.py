"""The apps/v1 DaemonSet controller: one pod of the template on every node that should run it.

A node should run the pod when the pod's node selector, required node affinity and tolerations (plus the
ones upstream adds to every daemon pod: not-ready, unreachable, pressure and unschedulable) admit it.
Each pod is named `<set>-<random>`, pinned to its node by a required node-affinity term on
`metadata.name` (the scheduler binds it there, as upstream does), and labelled `controller-revision-hash`
and `pod-template-generation`. Extra pods on a node, pods on nodes that should not run one, and failed
pods are deleted.

`RollingUpdate` (the default) replaces pods of an older template at most `maxUnavailable` (rounded up,
default 1) unavailable at a time: unavailable old pods go first, then available ones within the budget, and
each node gets its new pod as soon as the old one is gone. With `maxSurge` (rounded up) instead, up to that
many nodes at a time run their new pod beside the old one, which goes once the new one is available. `OnDelete` replaces a pod only when someone
deletes it. Status as upstream writes it and `kubectl rollout status` reads it: `desiredNumberScheduled`,
`currentNumberScheduled`, `numberMisscheduled`, `numberReady`, `numberAvailable`, `numberUnavailable`,
`updatedNumberScheduled`, `observedGeneration`.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Iterable
from typing import Any

from localkube.controllers import podstate
from localkube.controllers.api import ControllerApi
from localkube.controllers.ownership import (
    REVISION_LABEL,
    pod_from_template,
    revision_label,
)
from localkube.controllers.replicaset import compact, deletion_order
from localkube.controllers.rollout import RolloutError, scaled_value, template_hash
from localkube.controllers.scheduling import placement_misfit
from localkube.controllers.workload import OwningController
from localkube.storage import Event, Store

DAEMONSETS_PREFIX = "/registry/apps/daemonsets/"
NODES_PREFIX = "/registry/core/nodes/"
GENERATION_LABEL = "pod-template-generation"

# What upstream's daemon pods tolerate, so that they run where ordinary pods may not (yet).
_DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def pinned_to(spec: dict[str, Any], node: str) -> dict[str, Any]:
    """A pod spec whose required node affinity also demands the node named `node`."""
    pinned = copy.deepcopy(spec)
    node_affinity = pinned.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    match = {"key": "metadata.name", "operator": "In", "values": [node]}
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [
        {
            **term,
            "matchFields": [
                *(f for f in term.get("matchFields") or [] if f.get("key") != "metadata.name"),
                match,
            ],
        }
        for term in terms
    ]
    tolerations = pinned.setdefault("tolerations", [])
    tolerations.extend(t for t in _DAEMON_TOLERATIONS if t not in tolerations)
    return pinned


def node_of(pod: dict[str, Any]) -> str | None:
    """The node a daemon pod runs on, or is pinned to while not yet bound."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in required:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return None


class DaemonSetController(OwningController):
    name = "daemonset-controller"
    owner_prefix = DAEMONSETS_PREFIX
    owner_kind = "DaemonSet"
    keeps_history = True

    def __init__(
        self, store: Store, api: ControllerApi, clock: Callable[[], datetime.datetime] = podstate.now
    ) -> None:
        super().__init__(store, api, clock)
        self._nodes: dict[str, dict[str, Any]] = {}
        self._sets: set[str] = set()

    @property
    def prefixes(self) -> tuple[str, ...]:
        return (*super().prefixes, NODES_PREFIX)

    def observe(self, event: Event) -> Iterable[str]:
        if event.key.startswith(NODES_PREFIX):
            name = event.key.removeprefix(NODES_PREFIX)
            if event.type == "DELETED":
                self._nodes.pop(name, None)
            else:
                self._nodes[name] = event.object
            return sorted(self._sets)
        if event.key.startswith(DAEMONSETS_PREFIX):
            if event.type == "DELETED":
                self._sets.discard(event.key)
            else:
                self._sets.add(event.key)
        return super().observe(event)

    def sync(self, key: str, daemonset: dict[str, Any], pods: list[dict[str, Any]]) -> float | None:
        spec = daemonset.get("spec") or {}
        revision = template_hash(
            spec.get("template") or {}, int((daemonset.get("status") or {}).get("collisionCount") or 0)
        )
        revision_name = f"{daemonset['metadata']['name']}-{revision}"
        self._record(daemonset, revision_name, revision)
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self._clock()
        wanted = {name for name, node in self._nodes.items() if self._should_run(daemonset, node)}
        on_node: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            node = node_of(pod)
            if node is not None and not podstate.terminating(pod):
                on_node.setdefault(node, []).append(pod)
        for node, node_pods in sorted(on_node.items()):
            failed = [p for p in node_pods if podstate.phase(p) == "Failed"]
            running = [p for p in node_pods if podstate.active(p)]
            doomed = failed + (running if node not in wanted else _extras(running))
            for pod in doomed:
                self._delete_pod(daemonset, pod)
            on_node[node] = [p for p in node_pods if p not in doomed and podstate.active(p)]
        self._roll(daemonset, on_node, wanted, revision, min_ready, now)
        for node in sorted(wanted):
            if not on_node.get(node):
                self._create(daemonset, node, revision)
        recheck = self._write_status(key, daemonset, wanted, revision, now)
        in_use = {revision_name} | {f"{daemonset['metadata']['name']}-{revision_label(p)}" for p in pods}
        self._prune(daemonset, in_use)
        return recheck

    def _should_run(self, daemonset: dict[str, Any], node: dict[str, Any]) -> bool:
        template = (daemonset.get("spec") or {}).get("template") or {}
        probe = {"spec": pinned_to(template.get("spec") or {}, node["metadata"]["name"])}
        return not placement_misfit(probe, node)

    def _roll(
        self,
        daemonset: dict[str, Any],
        on_node: dict[str, list[dict[str, Any]]],
        wanted: set[str],
        revision: str,
        min_ready: int,
        now: datetime.datetime,
    ) -> None:
        """Replaces old pods: within `maxUnavailable` (deleted first; their nodes get new pods in the same
        pass), or, with `maxSurge`, on at most that many nodes at once beside the old pod, which goes once
        the new one is available."""
        strategy = (daemonset.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        rolling = strategy.get("rollingUpdate") or {}
        try:
            surge = scaled_value(rolling.get("maxSurge"), len(wanted), round_up=True, default=0)
            budget = scaled_value(rolling.get("maxUnavailable"), len(wanted), round_up=True, default=1)
        except RolloutError as err:
            raise ValueError(f"spec.updateStrategy.rollingUpdate: {err}") from err
        if surge > 0:
            self._surge(daemonset, on_node, wanted, revision, surge, min_ready, now)
            return
        budget = max(budget, 1)
        unavailable = sum(
            1
            for node in wanted
            if not any(podstate.available(p, min_ready, now) for p in on_node.get(node, []))
        )
        old = [
            (node, pod)
            for node in sorted(wanted)
            for pod in on_node.get(node, [])
            if revision_label(pod) != revision
        ]
        old.sort(key=lambda item: podstate.available(item[1], min_ready, now))
        for node, pod in old:
            if podstate.available(pod, min_ready, now):
                if unavailable >= budget:
                    break
                unavailable += 1
            self._delete_pod(daemonset, pod)
            on_node[node] = [p for p in on_node[node] if p is not pod]

    def _surge(
        self,
        daemonset: dict[str, Any],
        on_node: dict[str, list[dict[str, Any]]],
        wanted: set[str],
        revision: str,
        surge: int,
        min_ready: int,
        now: datetime.datetime,
    ) -> None:
        surging = 0
        waiting: list[tuple[str, bool]] = []  # nodes with only old pods, and whether one is available
        for node in sorted(wanted):
            pods = on_node.get(node, [])
            new = [p for p in pods if revision_label(p) == revision]
            old = [p for p in pods if revision_label(p) != revision]
            if not old:
                continue
            if any(podstate.available(p, min_ready, now) for p in new):
                for pod in old:
                    self._delete_pod(daemonset, pod)
                on_node[node] = new
            elif new:
                surging += 1
            else:
                waiting.append((node, any(podstate.available(p, min_ready, now) for p in old)))
        for node, old_available in waiting:
            # A node whose old pod is down anyway gets its new pod without using the surge.
            if old_available:
                if surging >= surge:
                    continue
                surging += 1
            created = self._create(daemonset, node, revision)
            if created is not None:
                on_node[node].append(created)

    def _create(self, daemonset: dict[str, Any], node: str, revision: str) -> dict[str, Any] | None:
        labels = {REVISION_LABEL: revision, GENERATION_LABEL: str(daemonset["metadata"].get("generation", 1))}
        pod = pod_from_template(daemonset, labels=labels)
        pod["spec"] = pinned_to(pod["spec"], node)
        return self._create_pod(daemonset, pod)

    def _write_status(
        self, key: str, daemonset: dict[str, Any], wanted: set[str], revision: str, now: datetime.datetime
    ) -> float | None:
        fresh = self._store.get(key) or daemonset
        min_ready = int((fresh.get("spec") or {}).get("minReadySeconds") or 0)
        pods = [p for p in self._owned.owned(fresh["metadata"]["uid"]) if podstate.active(p)]
        scheduled: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName"):
                scheduled.setdefault(pod["spec"]["nodeName"], []).append(pod)
        waits = [podstate.available_in(pod, min_ready, now) for pod in pods]
        available = sum(
            1
            for node in wanted
            if any(podstate.available(p, min_ready, now) for p in scheduled.get(node, []))
        )
        status = {
            "currentNumberScheduled": sum(1 for node in wanted if scheduled.get(node)),
            "numberMisscheduled": sum(1 for node in scheduled if node not in wanted),
            "desiredNumberScheduled": len(wanted),
            "numberReady": sum(
                1 for node in wanted if any(podstate.ready(p) for p in scheduled.get(node, []))
            ),
            "observedGeneration": fresh["metadata"].get("generation", 1),
            "updatedNumberScheduled": sum(
                1 for node in wanted if any(revision_label(p) == revision for p in scheduled.get(node, []))
            ),
            "numberAvailable": available,
            "numberUnavailable": len(wanted) - available,
        }
        previous = fresh.get("status") or {}
        if previous.get("collisionCount"):
            status["collisionCount"] = previous["collisionCount"]
        status = compact(
            status,
            required=(
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
            ),
        )
        return self._publish(key, fresh, status, waits)


def _extras(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods beyond one per template revision on a node (two revisions meet only during an update)."""
    by_revision: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_revision.setdefault(revision_label(pod), []).append(pod)
    return [extra for group in by_revision.values() for extra in deletion_order(group)[:-1]]
