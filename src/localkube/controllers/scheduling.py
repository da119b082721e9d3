"""Scheduling decisions: does a pod fit a node, and if no node fits, the reason the real scheduler gives.

Pure functions over JSON-shaped objects; the scheduler controller feeds them the nodes and the pods
already bound. A pod's request is what kube-scheduler computes: the larger of the sum over its containers
and the largest init container, per resource, plus `spec.overhead`. Terminated pods (Succeeded, Failed)
hold nothing. Checks, in kube-scheduler's order of plugins: unschedulable node, node selector and required
node affinity (`matchExpressions` on labels, `matchFields` on the node's name), untolerated NoSchedule/NoExecute taints, then resources
(including the node's pod count).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesemantics import quantity
from kubesemantics.selectors import matches_labels, requirement_matches


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Fraction]:
    """The resources kube-scheduler reserves for a pod, as exact amounts (cpu in cores, memory in bytes)."""
    spec = pod.get("spec") or {}
    total: defaultdict[str, Fraction] = defaultdict(Fraction)
    for container in spec.get("containers") or []:
        for name, amount in _container_requests(container).items():
            total[name] += amount
    for container in spec.get("initContainers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = max(total[name], amount)
    for name, amount in (spec.get("overhead") or {}).items():
        total[name] += quantity.parse(amount)
    return dict(total)


def _container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    # A limit without a request defaults the request to the limit (API server defaulting).
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: quantity.parse(amount) for name, amount in merged.items()}


@dataclass
class NodeUsage:
    """What the pods bound to one node hold: the sum of their requests and their number."""

    requests: defaultdict[str, Fraction] = field(default_factory=lambda: defaultdict(Fraction))
    pods: int = 0

    def add(self, requests: Mapping[str, Fraction], sign: int = 1) -> None:
        for name, amount in requests.items():
            self.requests[name] += sign * amount
        self.pods += sign


def holds_resources(pod: Mapping[str, Any]) -> bool:
    """A pod holds its requests from binding until it terminates (Succeeded or Failed)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def misfit(pod: Mapping[str, Any], node: Mapping[str, Any], usage: NodeUsage) -> list[str]:
    """Why `pod` cannot run on `node` given what the pods bound to it already hold: kube-scheduler's
    per-node reasons (e.g. "Insufficient cpu"); empty when it fits."""
    if (node.get("spec") or {}).get("unschedulable"):
        return ["node(s) were unschedulable"]
    reasons = placement_misfit(pod, node)
    if reasons:
        return reasons
    allocatable = {
        name: quantity.parse(v) for name, v in ((node.get("status") or {}).get("allocatable") or {}).items()
    }
    reasons = []
    if "pods" in allocatable and usage.pods + 1 > allocatable["pods"]:
        reasons.append("Too many pods")
    for name, amount in sorted(pod_requests(pod).items()):
        if amount > 0 and usage.requests[name] + amount > allocatable.get(name, Fraction(0)):
            reasons.append(f"Insufficient {name}")
    return reasons


def placement_misfit(pod: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    """Why `pod` may not be placed on `node` at all: node selector, required node affinity, untolerated
    taints (what a DaemonSet checks to decide which nodes run its pod); empty when it may."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if not matches_labels(selector, labels) or not _affinity_matches(
        spec, labels, str(metadata.get("name") or "")
    ):
        return ["node(s) didn't match Pod's node affinity/selector"]
    taint = _untolerated_taint((node.get("spec") or {}).get("taints") or [], spec.get("tolerations") or [])
    if taint is not None:
        return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"]
    return []


def unschedulable_message(per_node: Mapping[str, list[str]]) -> str:
    """The PodScheduled=False message for a pod no node fits, in kube-scheduler's words, e.g.
    "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption
    victims found for incoming pod."."""
    counts = Counter(reason for reasons in per_node.values() for reason in reasons)
    total = len(per_node)
    if not total:
        return "no nodes available to schedule pods"
    detail = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    return (
        f"0/{total} nodes are available: {detail}. preemption: 0/{total} nodes are available: "
        f"{total} No preemption victims found for incoming pod."
    )


def _affinity_matches(spec: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    )
    if not required:
        return True
    # `matchFields` may only name `metadata.name` (a DaemonSet pins its pods to a node this way).
    fields = {"metadata.name": node_name}
    return any(
        all(requirement_matches(e, labels) for e in term.get("matchExpressions") or [])
        and all(requirement_matches(e, fields) for e in term.get("matchFields") or [])
        for term in required
    )


def _untolerated_taint(
    taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]
) -> dict[str, Any] | None:
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(toleration, taint) for toleration in tolerations):
            return taint
    return None


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")
