"""ResourceQuota: what an object costs, whether a create fits a namespace's quotas, and a quota's validation.

The rules are kube-apiserver's ResourceQuota admission and the quota evaluators it shares with the quota
controller. A pod costs `pods`, `count/pods` and its compute resources (`cpu`/`requests.cpu`,
`limits.cpu`, the same for memory and ephemeral storage), the larger of the sum over its containers and its
largest init container, plus its overhead; a pod that has finished (or whose deletion grace period ran out)
costs only `count/pods`. Any other object costs `count/<resource>[.<group>]`, and the kinds quota knew
before object counts also their legacy name (`services`, `configmaps`, `secrets`, ...), a Service also
`services.nodeports` and `services.loadbalancers`, a PersistentVolumeClaim its `requests.storage`.

Admission reads a quota's `status`, as upstream does: a quota the controller has not yet published limits
nothing, and one whose `status.used` lacks a resource of its `status.hard` refuses what would consume it.
Pure functions over JSON-shaped objects; the caller reads the store and writes what was charged.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubesemantics import quantity, times
from kubesemantics.quantity import QuantityError
from localkube.admission.errors import INVALID, AdmissionControlError, FieldError

PODS = "pods"
# The compute resources quota counts for a pod, by the container field they come from.
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_POD_RESOURCES = frozenset(
    {
        "pods", "count/pods",
        *_COMPUTE, *(f"requests.{r}" for r in _COMPUTE), *(f"limits.{r}" for r in _COMPUTE),
    }
)  # fmt: skip
# Upstream's backward-compatibility mistake, kept: quota on these makes every container name them.
_MUST_SPECIFY = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
_HUGEPAGES = ("hugepages-", "requests.hugepages-")
# The resources that counted objects before `count/<resource>` existed.
_LEGACY_COUNTS = {
    "services": "services",
    "configmaps": "configmaps",
    "secrets": "secrets",
    "persistentvolumeclaims": "persistentvolumeclaims",
    "replicationcontrollers": "replicationcontrollers",
    "resourcequotas": "resourcequotas",
}
_STANDARD_NAMES = frozenset(
    {
        *_POD_RESOURCES, *_LEGACY_COUNTS, "services.nodeports", "services.loadbalancers",
        "requests.storage",
    }
)  # fmt: skip
# Resource names whose quantities must be whole numbers.
_INTEGER_NAMES = frozenset({"pods", *_LEGACY_COUNTS, "services.nodeports", "services.loadbalancers"})
_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity")  # fmt: skip


class QuotaRefused(AdmissionControlError):
    """A create the namespace's quotas do not allow; the message is upstream's reason (`exceeded quota: ...`)."""


@dataclass
class Amount:
    """A quantity being summed, with the format Go's `Quantity.Add` leaves it in: its first non-zero term's."""

    value: Fraction
    binary: bool = False

    @classmethod
    def of(cls, text: Any) -> Amount:
        return cls(quantity.parse(text), quantity.is_binary(text))

    def add(self, other: Amount) -> None:
        if self.value == 0:
            self.binary = other.binary
        self.value += other.value

    def text(self) -> str:
        return quantity.canonical(self.value, self.binary)


Usage = dict[str, Amount]


def object_count_name(plural: str, group: str) -> str:
    """`count/pods`, `count/deployments.apps`: the object-count resource of a group's resource."""
    return f"count/{plural}.{group}" if group else f"count/{plural}"


def evaluated(plural: str, group: str, hard: Iterable[str]) -> list[str]:
    """The resources of `hard` an object of (group, plural) is charged for (upstream's MatchingResources)."""
    names = set(hard)
    if plural == PODS and not group:
        return sorted(
            name
            for name in names
            if name in _POD_RESOURCES
            or name.startswith(_HUGEPAGES)
            or (name.startswith("requests.") and "/" in name)  # extended resources, requests only
        )
    own = {object_count_name(plural, group)}
    if not group and plural in _LEGACY_COUNTS:
        own.add(_LEGACY_COUNTS[plural])
    if not group and plural == "services":
        own |= {"services.nodeports", "services.loadbalancers"}
    if not group and plural == "persistentvolumeclaims":
        own.add("requests.storage")
    return sorted(names & own)


def usage(plural: str, group: str, obj: Mapping[str, Any], now: datetime.datetime) -> Usage:
    """What one object costs (upstream's evaluator Usage)."""
    if plural == PODS and not group:
        return pod_usage(obj, now)
    used: Usage = {object_count_name(plural, group): Amount(Fraction(1))}
    if not group and plural in _LEGACY_COUNTS:
        used[_LEGACY_COUNTS[plural]] = Amount(Fraction(1))
    if not group and plural == "services":
        spec = obj.get("spec") or {}
        kind = spec.get("type") or "ClusterIP"
        node_ports = (
            sum(1 for port in spec.get("ports") or [] if port.get("nodePort") or kind != "ClusterIP")
            if kind in ("NodePort", "LoadBalancer")
            else 0
        )
        used["services.nodeports"] = Amount(Fraction(node_ports))
        used["services.loadbalancers"] = Amount(Fraction(1 if kind == "LoadBalancer" else 0))
    if not group and plural == "persistentvolumeclaims":
        storage = (((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
        if storage is not None:
            used["requests.storage"] = Amount.of(storage)
    return used


def pod_usage(pod: Mapping[str, Any], now: datetime.datetime) -> Usage:
    """A pod's cost: always `count/pods`; `pods` and its compute resources while it counts (see module)."""
    used: Usage = {"count/pods": Amount(Fraction(1))}
    if not _counts(pod, now):
        return used
    spec = pod.get("spec") or {}
    requests, limits = _pod_resources(spec)
    _add(used, _container_usage(requests, limits))
    return used


def _counts(pod: Mapping[str, Any], now: datetime.datetime) -> bool:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    metadata = pod.get("metadata") or {}
    deleted, grace = metadata.get("deletionTimestamp"), metadata.get("deletionGracePeriodSeconds")
    if deleted and grace is not None:
        try:
            expiry = times.parse_time(str(deleted)) + datetime.timedelta(seconds=int(grace))
        except ValueError:
            return True
        return now <= expiry
    return True


def _resources_of(container: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    resources = container.get("resources") or {}
    limits = dict(resources.get("limits") or {})
    # The decoder defaults a request to its limit where only the limit is given.
    requests = {**limits, **(resources.get("requests") or {})}
    return requests, limits


def _pod_resources(spec: Mapping[str, Any]) -> tuple[Usage, Usage]:
    """The pod's requests and limits as upstream's PodRequests and PodLimits sum them: containers and
    restartable (sidecar) init containers add up, each other init container counts with the sidecars
    started before it, the larger of the two wins; then the overhead."""
    totals: list[Usage] = [{}, {}]
    for container in spec.get("containers") or []:
        for total, values in zip(totals, _resources_of(container), strict=True):
            _add(total, {k: Amount.of(v) for k, v in values.items()})
    sidecars: list[Usage] = [{}, {}]
    init_peak: list[Usage] = [{}, {}]
    for container in spec.get("initContainers") or []:
        for index, values in enumerate(_resources_of(container)):
            amounts = {k: Amount.of(v) for k, v in values.items()}
            if container.get("restartPolicy") == "Always":
                _add(sidecars[index], amounts)
                _add(totals[index], amounts)
                continue
            during = {k: Amount(a.value, a.binary) for k, a in sidecars[index].items()}
            _add(during, amounts)
            for name, amount in during.items():
                if name not in init_peak[index] or amount.value > init_peak[index][name].value:
                    init_peak[index][name] = amount
    for total, peak in zip(totals, init_peak, strict=True):
        for name, amount in peak.items():
            if name not in total or amount.value > total[name].value:
                total[name] = amount
    for total in totals:
        _add(total, {k: Amount.of(v) for k, v in (spec.get("overhead") or {}).items()})
    return totals[0], totals[1]


def _container_usage(requests: Mapping[str, Amount], limits: Mapping[str, Amount]) -> Usage:
    """Upstream's podComputeUsageHelper: what requests and limits mean in quota's resource names."""
    used: Usage = {PODS: Amount(Fraction(1))}
    for name in _COMPUTE:
        if name in requests:
            used[name] = _copy(requests[name])
            used[f"requests.{name}"] = _copy(requests[name])
        if name in limits:
            used[f"limits.{name}"] = _copy(limits[name])
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            used[name] = _copy(amount)
            used[f"requests.{name}"] = _copy(amount)
        elif "/" in name and not name.startswith("kubernetes.io/"):
            used[f"requests.{name}"] = _copy(amount)
    return used


def _copy(amount: Amount) -> Amount:
    return Amount(amount.value, amount.binary)


def _add(total: Usage, addend: Mapping[str, Amount]) -> Usage:
    for name, amount in addend.items():
        if name in total:
            total[name].add(amount)
        else:
            total[name] = _copy(amount)
    return total


def _missing(pod: Mapping[str, Any], required: set[str]) -> str | None:
    """Upstream's Constraints: each container must name every cpu or memory resource quota limits."""
    if not required:
        return None
    spec = pod.get("spec") or {}
    missing: dict[str, list[str]] = {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        requests, limits = _resources_of(container)
        has = set(
            _container_usage(
                {k: Amount.of(v) for k, v in requests.items()}, {k: Amount.of(v) for k, v in limits.items()}
            )
        )
        for name in sorted(required - has):
            missing.setdefault(name, []).append(str(container.get("name", "")))
    if not missing:
        return None
    return "must specify " + "; ".join(
        f"{name} for: {','.join(sorted(set(missing[name])))}" for name in sorted(missing)
    )


def _scope_matches(scope: str, operator: str, values: list[str], pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    if scope in ("Terminating", "NotTerminating"):
        deadline = spec.get("activeDeadlineSeconds")
        terminating = isinstance(deadline, int) and deadline >= 0
        return terminating == (scope == "Terminating")
    if scope in ("BestEffort", "NotBestEffort"):
        containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        best_effort = not any(
            (c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits")
            for c in containers
        )
        return best_effort == (scope == "BestEffort")
    if scope == "PriorityClass":
        name = spec.get("priorityClassName") or ""
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return bool(name) and name in values
        if operator == "NotIn":
            return not name or name not in values
    return False


def _selectors(resource_quota: Mapping[str, Any]) -> list[tuple[str, str, list[str]]]:
    spec = resource_quota.get("spec") or {}
    found: list[tuple[str, str, list[str]]] = [(str(s), "Exists", []) for s in spec.get("scopes") or []]
    for expression in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        found.append(
            (
                str(expression.get("scopeName")),
                str(expression.get("operator")),
                list(expression.get("values") or []),
            )
        )
    return found


def matches(resource_quota: Mapping[str, Any], plural: str, group: str, obj: Mapping[str, Any]) -> bool:
    """Whether a quota limits an object: it names a resource the object is charged for, in `status.hard`,
    and the object is in every one of its scopes (only pods are in any scope)."""
    hard = (resource_quota.get("status") or {}).get("hard") or {}
    if not evaluated(plural, group, hard):
        return False
    is_pod = plural == PODS and not group
    return all(is_pod and _scope_matches(s, op, v, obj) for s, op, v in _selectors(resource_quota))


def _pretty(values: Mapping[str, Amount]) -> str:
    return ",".join(f"{name}={values[name].text()}" for name in sorted(values))


def _amounts(values: Mapping[str, Any] | None) -> Usage:
    found: Usage = {}
    for name, text in (values or {}).items():
        try:
            found[name] = Amount.of(text)
        except QuantityError:
            continue
    return found


def charge(
    quotas: list[dict[str, Any]], plural: str, group: str, obj: Mapping[str, Any], now: datetime.datetime
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Checks the create of `obj` against the namespace's quotas; returns each quota it changes with its
    new `status.used`, or raises `QuotaRefused` with upstream's reason."""
    interesting: list[dict[str, Any]] = []
    for resource_quota in quotas:
        if not matches(resource_quota, plural, group, obj):
            continue
        name = resource_quota["metadata"]["name"]
        status = resource_quota.get("status") or {}
        restricted = evaluated(plural, group, status.get("hard") or {})
        if plural == PODS and not group:
            missing = _missing(obj, set(restricted) & _MUST_SPECIFY)
            if missing is not None:
                raise QuotaRefused(f"failed quota: {name}: {missing}")
        unknown = [r for r in restricted if r not in (status.get("used") or {})]
        if unknown:
            raise QuotaRefused(f"status unknown for quota: {name}, resources: {','.join(sorted(unknown))}")
        interesting.append(resource_quota)
    if not interesting:
        return []
    delta = {k: v for k, v in usage(plural, group, obj, now).items() if v.value != 0}
    if not delta:
        return []
    changed: list[tuple[dict[str, Any], dict[str, str]]] = []
    for resource_quota in interesting:
        status = resource_quota.get("status") or {}
        hard, used = _amounts(status.get("hard")), _amounts(status.get("used"))
        requested = {k: v for k, v in delta.items() if k in hard}
        if not requested:
            continue
        exceeded = sorted(
            name
            for name, amount in requested.items()
            if (used[name].value if name in used else 0) + amount.value > hard[name].value
        )
        if exceeded:
            raise QuotaRefused(
                f"exceeded quota: {resource_quota['metadata']['name']}, "
                f"requested: {_pretty({k: requested[k] for k in exceeded})}, "
                f"used: {_pretty({k: used[k] for k in exceeded if k in used})}, "
                f"limited: {_pretty({k: hard[k] for k in exceeded})}"
            )
        new_used = dict(status.get("used") or {})
        for name, amount in requested.items():
            total = _copy(used[name]) if name in used else Amount(Fraction(0))
            total.add(amount)
            new_used[name] = total.text()
        changed.append((resource_quota, new_used))
    return changed


def calculate(
    hard: Mapping[str, Any],
    resource_quota: Mapping[str, Any],
    objects: Mapping[tuple[str, str], list[dict[str, Any]]],
    now: datetime.datetime,
) -> dict[str, str]:
    """What the quota controller publishes as `status.used`: for each resource of `hard` some evaluator
    counts, the sum over the namespace's `objects` (by (group, plural)) the quota matches; "0" for none."""
    scoped = _selectors(resource_quota)
    total: Usage = {}
    for (group, plural), items in objects.items():
        names = evaluated(plural, group, hard)
        if not names:
            continue
        if scoped and not (plural == PODS and not group):
            continue
        for name in names:
            total.setdefault(name, Amount(Fraction(0)))
        for item in items:
            if scoped and not all(_scope_matches(s, op, v, item) for s, op, v in scoped):
                continue
            cost = usage(plural, group, item, now)
            _add(total, {k: v for k, v in cost.items() if k in names})
    return {name: amount.text() for name, amount in total.items()}


def counted_resource(name: str) -> tuple[str, str] | None:
    """(group, plural) of a quota resource name that counts objects (`count/deployments.apps`,
    `configmaps`); None for compute resources and names that count nothing."""
    if name.startswith("count/"):
        plural, _, group = name.removeprefix("count/").partition(".")
        return (group, plural) if plural else None
    if name in _LEGACY_COUNTS:
        return "", _LEGACY_COUNTS[name]
    if name in ("services.nodeports", "services.loadbalancers"):
        return "", "services"
    if name == "requests.storage":
        return "", "persistentvolumeclaims"
    if name in _POD_RESOURCES or name.startswith(_HUGEPAGES) or name.startswith("requests."):
        return "", PODS
    return None


def validate(obj: Mapping[str, Any]) -> list[FieldError]:
    """A ResourceQuota's spec as upstream validates it: each `spec.hard` entry a quota resource name and a
    non-negative quantity (whole for the counted resources), each scope a known one. Values print in their
    canonical form (`1.5` as `1500m`)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    causes: list[FieldError] = []
    for name, value in sorted((spec.get("hard") or {}).items()):
        path = f"spec.hard[{name}]"
        if "/" not in name and name not in _STANDARD_NAMES and not name.startswith(_HUGEPAGES):
            if name != "storage":  # a resource name, though not one quota counts
                causes.append(
                    FieldError(path, INVALID, name, "must be a standard resource type or fully qualified")
                )
            causes.append(FieldError(path, INVALID, name, "must be a standard resource for quota"))
        try:
            amount = quantity.parse(value)
        except QuantityError:
            continue  # the schema's decoding refuses it first
        text = quantity.canonical(amount, quantity.is_binary(value))
        if amount < 0:
            causes.append(FieldError(path, INVALID, text, "must be greater than or equal to 0"))
        if (name in _INTEGER_NAMES or name.startswith("count/")) and amount.denominator != 1:
            causes.append(FieldError(path, INVALID, text, "must be an integer"))
    scopes = list(spec.get("scopes") or [])
    for scope in scopes:
        if scope not in _SCOPES:
            causes.append(FieldError("spec.scopes", INVALID, scopes, "unsupported scope"))
    return causes
