"""The apps/v1 ReplicaSet controller: keeps `spec.replicas` active pods of the template.

Pods are named `<replicaset>-<random>` and controlled by the ReplicaSet (deleting it deletes them through
the garbage collector). Pods matching the selector with no controller are adopted; owned pods whose labels
stop matching are released. Surplus pods are deleted in upstream's order: unscheduled before scheduled,
Pending before Running, not ready before ready, ready for less time first, more restarts first, newest
first. Status: `replicas` (active pods), `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas`
(ready for `minReadySeconds`) and `observedGeneration`; zero counts other than `replicas` are omitted, as
the real API serializes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from localkube.controllers import podstate
from localkube.controllers.ownership import pod_from_template
from localkube.controllers.workload import OwningController

REPLICASETS_PREFIX = "/registry/apps/replicasets/"
PODS_PREFIX = "/registry/core/pods/"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods in the order a scale-down deletes them (upstream's `ActivePods` ranking)."""

    def rank(pod: dict[str, Any]) -> tuple[Any, ...]:
        since = podstate.ready_since(pod)
        created = str(pod["metadata"].get("creationTimestamp") or "")
        return (
            bool((pod.get("spec") or {}).get("nodeName")),
            _PHASE_RANK.get(podstate.phase(pod), 3),
            since is not None,
            -(since.timestamp()) if since is not None else 0.0,
            -podstate.restarts(pod),
            tuple(-ord(char) for char in created),
        )

    return sorted(pods, key=rank)


def compact(status: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    """`status` without the zero counts the API leaves out (`omitempty`), keeping the `required` ones."""
    keep = set(required)
    return {k: v for k, v in status.items() if k in keep or v not in (0, None, [], {})}


class ReplicaSetController(OwningController):
    name = "replicaset-controller"
    owner_prefix = REPLICASETS_PREFIX
    owner_kind = "ReplicaSet"

    def sync(self, key: str, replicaset: dict[str, Any], pods: list[dict[str, Any]]) -> float | None:
        spec = replicaset.get("spec") or {}
        active = [pod for pod in pods if podstate.active(pod)]
        missing = int(spec.get("replicas", 1)) - len(active)
        for _ in range(missing):
            created = self._create_pod(replicaset, pod_from_template(replicaset))
            if created is None:
                return None
            active.append(created)
        if missing < 0:
            doomed = deletion_order(active)[:-missing]
            for pod in doomed:
                self._delete_pod(replicaset, pod)
            active = [pod for pod in active if pod not in doomed]
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        moment = self._clock()
        waits = [podstate.available_in(pod, min_ready, moment) for pod in active]
        status = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(
                1
                for pod in active
                if template_labels.items() <= (pod["metadata"].get("labels") or {}).items()
            ),
            "readyReplicas": sum(1 for pod in active if podstate.ready(pod)),
            "availableReplicas": sum(1 for wait in waits if wait == 0.0),
            "observedGeneration": replicaset["metadata"].get("generation", 1),
        }
        return self._publish(key, replicaset, compact(status, required=("replicas",)), waits)
