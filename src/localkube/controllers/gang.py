"""Gang scheduling for the schedulers localkube can stand in for: Volcano (`volcano`) and scheduler-plugins'
coscheduling (`scheduler-plugins-scheduler`).

A pod joins a gang by naming a PodGroup: Volcano's pods with the annotation `scheduling.k8s.io/group-name`
(a `scheduling.volcano.sh` PodGroup), scheduler-plugins' pods with the label `scheduling.x-k8s.io/pod-group`
(a `scheduling.x-k8s.io` PodGroup), in the pod's namespace. The scheduler binds a gang's pending pods only
when, together with the members already bound, at least `spec.minMember` of them fit the nodes at once;
otherwise none is bound and each stays Pending with `PodScheduled=False`, reason `Unschedulable`. A pod whose
PodGroup does not exist waits for it. `minResources` and queues are not checked.

The PodGroup's `status.phase` records the outcome: `Pending` until the gang is bound, then `Running`
(Volcano) or `Scheduled` (scheduler-plugins). Pure functions here; the scheduler controller does the writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins-scheduler"


def _annotation(key: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda pod: str(((pod.get("metadata") or {}).get("annotations") or {}).get(key) or "")


def _label(key: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda pod: str(((pod.get("metadata") or {}).get("labels") or {}).get(key) or "")


@dataclass(frozen=True)
class Gang:
    scheduler: str  # the pods' spec.schedulerName
    group_prefix: str  # storage prefix of its PodGroups
    group_of: Callable[[Mapping[str, Any]], str]  # the PodGroup a pod names ("" when none)
    bound_phase: str  # the PodGroup's phase once its gang is bound

    def group_key(self, namespace: str, name: str) -> str:
        return f"{self.group_prefix}{namespace}/{name}"


GANGS: dict[str, Gang] = {
    VOLCANO: Gang(
        VOLCANO,
        "/registry/scheduling.volcano.sh/podgroups/",
        _annotation("scheduling.k8s.io/group-name"),
        "Running",
    ),
    SCHEDULER_PLUGINS: Gang(
        SCHEDULER_PLUGINS,
        "/registry/scheduling.x-k8s.io/podgroups/",
        _label("scheduling.x-k8s.io/pod-group"),
        "Scheduled",
    ),
}


def min_member(group: Mapping[str, Any]) -> int:
    value = (group.get("spec") or {}).get("minMember")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def not_ready_message(namespace: str, name: str, fitting: int, wanted: int) -> str:
    return f"pod group {namespace}/{name} is not ready: {fitting} of its pods fit, minMember is {wanted}"
