"""A new pod's priority, as kube-apiserver's Priority admission resolves it.

`spec.priorityClassName` names a PriorityClass whose `value` becomes `spec.priority` and whose
`preemptionPolicy` becomes `spec.preemptionPolicy`; an unknown name is refused. A pod naming none gets
the `globalDefault` class (the lowest-valued, should several claim it) and its name, or priority 0 and
`PreemptLowerPriority` when there is none. A priority or preemption policy the pod gives itself must equal
the resolved one. The two system classes resolve whether or not they are stored. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from localkube.admission.errors import AdmissionControlError

PREEMPT_LOWER = "PreemptLowerPriority"
SYSTEM_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


class PriorityRefused(AdmissionControlError):
    """A pod the Priority admission refuses; the message is upstream's reason."""


def default_class(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    defaults = [c for c in classes if c.get("globalDefault")]
    return min(defaults, key=lambda c: int(c.get("value") or 0)) if defaults else None


def resolve(pod: dict[str, Any], classes: Iterable[Mapping[str, Any]]) -> None:
    """Sets a new pod's `spec.priority` (and `priorityClassName`, `preemptionPolicy`) in place, or raises
    `PriorityRefused`."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    known = list(classes)
    name = spec.get("priorityClassName") or ""
    policy: str | None
    if not name:
        found = default_class(known)
        if found is None:
            priority, policy = 0, PREEMPT_LOWER
        else:
            name = found["metadata"]["name"]
            priority, policy = int(found.get("value") or 0), found.get("preemptionPolicy") or PREEMPT_LOWER
            spec["priorityClassName"] = name
    else:
        found = next((c for c in known if c["metadata"]["name"] == name), None)
        if found is not None:
            priority, policy = int(found.get("value") or 0), found.get("preemptionPolicy") or PREEMPT_LOWER
        elif name in SYSTEM_CLASSES:
            priority, policy = SYSTEM_CLASSES[name], PREEMPT_LOWER
        else:
            raise PriorityRefused(f"no PriorityClass with name {name} was found")
    given = spec.get("priority")
    if given is not None and given != priority:
        raise PriorityRefused(
            f"the integer value of priority ({given}) must not be provided in pod spec; priority admission "
            f"controller computed {priority} from the given PriorityClass name"
        )
    spec["priority"] = priority
    given_policy = spec.get("preemptionPolicy")
    if policy is not None and given_policy is not None and given_policy != policy:
        raise PriorityRefused(
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod spec; priority "
            f"admission controller computed {policy} from the given PriorityClass name"
        )
    spec["preemptionPolicy"] = policy


def check_class(obj: Mapping[str, Any], classes: Iterable[Mapping[str, Any]], creating: bool) -> None:
    """A PriorityClass write: at most one `globalDefault`, as upstream's validating half checks."""
    if not obj.get("globalDefault"):
        return
    name = (obj.get("metadata") or {}).get("name")
    found = default_class(c for c in classes if creating or c["metadata"]["name"] != name)
    if found is not None and (creating or found["metadata"]["name"] != name):
        raise PriorityRefused(
            f"PriorityClass {found['metadata']['name']} is already marked as default. Only one default can exist"
        )
