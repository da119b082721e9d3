"""What the real API server does to built-in kinds on create and delete, beyond the generic semantics.

- Pods get the defaults their readers rely on (restart and DNS policy, scheduler name, grace period,
  service account, each container's pull policy and termination-message settings) and start `Pending`
  with a QoS class.
- Services get a type, ports with protocol and targetPort, and a cluster IP allocated from 10.96.0.0/12
  (node ports from 30000-32767 for NodePort and LoadBalancer), unique among the stored Services.
- Namespaces start `Active` and carry the `kubernetes.io/metadata.name` label.
- Jobs get their scalar defaults on create; Deployments, ReplicaSets, StatefulSets and DaemonSets get theirs
  (and their pod template's) on every write.
- HorizontalPodAutoscalers get the autoscaling/v2 defaults on every write (`autoscaling`).
- A Secret's write-only `stringData` is folded into `data` (base64) on every write.
- A pod bound to a node is deleted gracefully: it keeps a deletionTimestamp until its node agent (or a
  delete with gracePeriodSeconds=0) removes it.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from localkube.server import autoscaling

_SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")
_NODE_PORTS = range(30000, 32768)
_KUBERNETES_SERVICE_IP = "10.96.0.1"


@dataclass
class ServiceAllocations:
    """The cluster IPs and node ports held by existing Services: built once from the store, then kept up
    to date by the REST layer, so allocating for a new Service does not read every Service."""

    cluster_ips: set[str] = field(default_factory=set)
    node_ports: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, services: Iterable[dict[str, Any]]) -> ServiceAllocations:
        allocations = cls()
        for service in services:
            allocations.hold(service)
        return allocations

    def hold(self, service: dict[str, Any]) -> None:
        spec = service.get("spec") or {}
        self.cluster_ips.update(ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip)
        self.node_ports.update(p["nodePort"] for p in spec.get("ports") or [] if p.get("nodePort"))

    def release(self, service: dict[str, Any]) -> None:
        spec = service.get("spec") or {}
        self.cluster_ips.difference_update(spec.get("clusterIPs") or [spec.get("clusterIP")])
        self.node_ports.difference_update(p.get("nodePort") for p in spec.get("ports") or [])


def default_on_create(kind: str, obj: dict[str, Any], services: Callable[[], ServiceAllocations]) -> None:
    """Fills the server-side defaults of a new built-in object in place."""
    if kind == "Pod":
        _default_pod_spec(obj.setdefault("spec", {}))
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj["spec"])}
    elif kind == "Service":
        _default_service(obj, services)
    elif kind == "Namespace":
        obj.setdefault("spec", {})
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"].get(
            "name", ""
        )
    elif kind == "Job":
        spec = obj.setdefault("spec", {})
        if "completions" not in spec and "parallelism" not in spec:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        if not spec.get("manualSelector"):
            _generate_job_selector(obj["metadata"], spec)
        _default_pod_spec((spec.get("template") or {}).get("spec") or {})


def _generate_job_selector(metadata: dict[str, Any], spec: dict[str, Any]) -> None:
    # As the real server does on create: the Job selects its pods by its own uid, and its template carries
    # those labels, so that clients resolving the Job to its pods (`kubectl logs job/NAME`) find only them.
    uid, name = metadata["uid"], metadata.get("name", "")
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
    )
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}


# What a kind's registry sets on create after the field manager has recorded the creator's fields (its
# strategy and allocators, as opposed to the decoder's defaults): nobody's unless the request set it.
SET_BY_REGISTRY: dict[str, tuple[tuple[str, ...], ...]] = {
    "Service": (
        ("spec", "clusterIP"),
        ("spec", "clusterIPs"),
        ("spec", "ipFamilies"),
        ("spec", "ipFamilyPolicy"),
    ),
    "Pod": (("status",),),
    "Namespace": (("status",),),
    "HorizontalPodAutoscaler": (("status",),),
}


def normalize_on_write(kind: str, obj: dict[str, Any]) -> None:
    """What the server does to a built-in object on every create and update, in place (the decoder's
    defaults among it)."""
    spec = obj.get("spec")
    if kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if kind == "NetworkPolicy" and isinstance(spec, dict) and not spec.get("policyTypes"):
        # Every policy implies Ingress; one with egress rules Egress too.
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    if kind == "LimitRange" and isinstance(spec, dict):
        for item in spec.get("limits") or []:
            if isinstance(item, dict) and item.get("type") == "Container":
                _default_limit_range_item(item)
    if kind in _WORKLOAD_DEFAULTS and isinstance(obj.get("spec"), dict | None):
        # Defaulted on every write, as the real server defaults every decoded object: a workload's
        # template must read the same whether it came in through a create, a replace or a patch.
        _default_workload(kind, obj.setdefault("spec", {}))
    if kind == "HorizontalPodAutoscaler" and obj.get("apiVersion") == autoscaling.V2:
        autoscaling.default_v2(obj)
    if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        _default_webhook_configuration(obj, mutating=kind.startswith("Mutating"))
    if kind == "Secret" and isinstance(obj.get("stringData"), dict):
        data: dict[str, Any] = obj["data"] if isinstance(obj.get("data"), dict) else {}
        for key, value in obj.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


def _default_limit_range_item(item: dict[str, Any]) -> None:
    """A container limit's defaults: the default limit from max, the default request from the default limit,
    then from min (empty maps are left out)."""
    default = dict(item.get("default") or {})
    request = dict(item.get("defaultRequest") or {})
    for source, target in ((item.get("max"), default), (default, request), (item.get("min"), request)):
        for resource, value in (source or {}).items():
            target.setdefault(resource, value)
    for key, value in (("default", default), ("defaultRequest", request)):
        if value:
            item[key] = value


_ROLLING = {"type": "RollingUpdate"}
_WORKLOAD_DEFAULTS: dict[str, dict[str, Any]] = {
    "Deployment": {
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
        "strategy": {**_ROLLING, "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
    },
    "ReplicaSet": {"replicas": 1},
    "StatefulSet": {
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {**_ROLLING, "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    },
    "DaemonSet": {
        "revisionHistoryLimit": 10,
        "updateStrategy": {**_ROLLING, "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
    },
}


def _default_workload(kind: str, spec: dict[str, Any]) -> None:
    for name, default in _WORKLOAD_DEFAULTS[kind].items():
        value = spec.get(name)
        if value is None:
            spec[name] = copy.deepcopy(default)
        elif isinstance(value, dict) and value.get("type", "RollingUpdate") == "RollingUpdate":
            # A rolling strategy (or a retention policy) given in part gets the rest of the defaults.
            for inner, inner_default in default.items():
                value.setdefault(inner, copy.deepcopy(inner_default))
    _default_pod_spec((spec.get("template") or {}).get("spec") or {})


def _default_pod_spec(spec: dict[str, Any]) -> None:
    if not spec:
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = account
    spec.setdefault("enableServiceLinks", True)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if not isinstance(container, dict):
            continue
        image = str(container.get("image", ""))
        tag = image.rpartition("/")[2].partition("@")[0]
        latest = ":" not in tag or tag.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest and "@" not in image else "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def _qos_class(spec: dict[str, Any]) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for r in resources:
        limits = r.get("limits") or {}
        requests = {**limits, **(r.get("requests") or {})}
        if not all(
            resource in limits and requests.get(resource) == limits[resource]
            for resource in ("cpu", "memory")
        ):
            return "Burstable"
    return "Guaranteed"


def _default_service(obj: dict[str, Any], services: Callable[[], ServiceAllocations]) -> None:
    spec = obj.setdefault("spec", {})
    service_type = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            # 0 and "" are unset too: client-go always writes a Go zero IntOrString.
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
    obj["status"] = {"loadBalancer": {}}
    if service_type == "ExternalName":
        return
    spec.setdefault("internalTrafficPolicy", "Cluster")
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    allocations = services()
    if not spec.get("clusterIP"):
        spec["clusterIP"] = _free_address(allocations.cluster_ips)
    spec["clusterIPs"] = [spec["clusterIP"]]
    if service_type in ("NodePort", "LoadBalancer"):
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = next(p for p in _NODE_PORTS if p not in allocations.node_ports)
                allocations.node_ports.add(port["nodePort"])
        spec.setdefault("externalTrafficPolicy", "Cluster")
    allocations.hold(obj)


def _free_address(used: set[str]) -> str:
    # Random probing keeps allocation O(1) in practice; the range holds about a million addresses (and
    # `used` is looked into, not copied: it holds every Service's address).
    size = _SERVICE_RANGE.num_addresses
    while True:
        candidate = str(_SERVICE_RANGE.network_address + 2 + secrets.randbelow(size - 3))
        if candidate not in used and candidate != _KUBERNETES_SERVICE_IP:
            return candidate


def graceful_deletion_seconds(
    kind: str, obj: dict[str, Any], options: dict[str, Any], query: dict[str, str]
) -> int:
    """How long a delete waits before the object may go: non-zero only for a running pod bound to a node."""
    if kind != "Pod" or not (obj.get("spec") or {}).get("nodeName"):
        return 0
    if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    requested = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    if requested is None:
        requested = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    return max(int(requested), 0)


def _default_webhook_configuration(obj: dict[str, Any], mutating: bool) -> None:
    """The server-side defaults of a webhook configuration, in place (as kube-apiserver stores them)."""
    for webhook in obj.get("webhooks") or []:
        if not isinstance(webhook, dict):
            continue
        webhook.setdefault("failurePolicy", "Fail")
        webhook.setdefault("matchPolicy", "Equivalent")
        webhook.setdefault("namespaceSelector", {})
        webhook.setdefault("objectSelector", {})
        webhook.setdefault("timeoutSeconds", 10)
        if mutating:
            webhook.setdefault("reinvocationPolicy", "Never")
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
        for rule in webhook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
