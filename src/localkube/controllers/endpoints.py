"""Endpoints and EndpointSlices for Services with a selector, from the pods that match it.

For each such Service: one `Endpoints` object of the Service's name (ready pods under `addresses`, the
others that have an address under `notReadyAddresses`, unless the Service sets `publishNotReadyAddresses`) and one `EndpointSlice` named `<service>-slice`
labelled `kubernetes.io/service-name`, both owned by the Service. A named `targetPort` is resolved against
each pod's container ports, as kube-proxy would. Terminating pods are left out. Services without a
selector are left alone (their endpoints belong to whoever manages them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesemantics.selectors import matches_labels
from localkube.controllers.api import ControllerApi
from localkube.storage import Event, Store

SERVICES_PREFIX = "/registry/core/services/"
PODS_PREFIX = "/registry/core/pods/"
ENDPOINTS_PREFIX = "/registry/core/endpoints/"
SLICES_PREFIX = "/registry/discovery.k8s.io/endpointslices/"
MANAGED_BY = "endpointslice-controller.k8s.io"


class EndpointsController:
    name = "endpoints-controller"
    prefixes = (SERVICES_PREFIX, PODS_PREFIX)

    def __init__(self, store: Store, api: ControllerApi) -> None:
        self._store = store
        self._api = api
        self._selectors: dict[str, dict[str, str]] = {}  # service key -> selector
        self._pods: dict[str, dict[str, Any]] = {}  # pod key -> what of the pod counts here (`_kept`)
        # Both indexed by (namespace, label, value): a pod under each of its labels, a selector under the one
        # of its pairs that selects the fewest (a cluster's name rather than a label every pod carries), so
        # an event only looks at the services and pods that can match.
        self._services_by_label: dict[tuple[str, str, str], set[str]] = {}
        self._service_pair: dict[str, tuple[str, str, str]] = {}
        self._pods_by_label: dict[tuple[str, str, str], set[str]] = {}

    def observe(self, event: Event) -> Iterable[str]:
        namespace = (event.object.get("metadata") or {}).get("namespace", "")
        if event.key.startswith(SERVICES_PREFIX):
            self._selectors.pop(event.key, None)
            pair = self._service_pair.pop(event.key, None)
            if pair is not None:
                self._services_by_label[pair].discard(event.key)
            selector = (event.object.get("spec") or {}).get("selector")
            if event.type == "DELETED" or not selector:
                return []
            self._selectors[event.key] = selector
            pair = self._narrowest(namespace, selector)
            self._service_pair[event.key] = pair
            self._services_by_label.setdefault(pair, set()).add(event.key)
            return [event.key]
        kept = None if event.type == "DELETED" else _kept(event.object)
        if kept is not None and kept == self._pods.get(event.key):
            # Nothing an endpoint shows changed (most of a pod's status writes): no service to rebuild.
            return []
        before = self._pods.pop(event.key, None)
        for pair in _pairs(namespace, before):
            self._pods_by_label[pair].discard(event.key)
        if kept is not None:
            self._pods[event.key] = kept
            for pair in _pairs(namespace, event.object):
                self._pods_by_label.setdefault(pair, set()).add(event.key)
        # Services that selected the pod before or select it now.
        wanted: set[str] = set()
        for pod in (before, event.object):
            labels = _labels(pod)
            for pair in _pairs(namespace, pod):
                for key in self._services_by_label.get(pair, ()):
                    if matches_labels(self._selectors[key], labels):
                        wanted.add(key)
        return sorted(wanted)

    def _narrowest(self, namespace: str, selector: dict[str, str]) -> tuple[str, str, str]:
        """The selector's pair that the fewest pods carry (ties: the fewest services already use it)."""
        pairs = [(namespace, k, v) for k, v in sorted(selector.items())]
        return min(
            pairs,
            key=lambda p: (len(self._pods_by_label.get(p, ())), len(self._services_by_label.get(p, ()))),
        )

    def reconcile(self, key: str) -> float | None:
        service = self._store.get(key)
        if service is None or not (service.get("spec") or {}).get("selector"):
            return None
        metadata = service["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        selector = service["spec"]["selector"]
        candidates = sorted(self._pods_by_label.get(self._narrowest(namespace, selector), ()))
        pods = [
            pod
            for pod in (self._pods[k] for k in candidates)
            if matches_labels(selector, _labels(pod))
            and (pod.get("status") or {}).get("podIP")
            and not pod["metadata"].get("deletionTimestamp")
        ]
        owner = {
            "apiVersion": "v1",
            "kind": "Service",
            "name": name,
            "uid": metadata["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        self._write(
            f"{ENDPOINTS_PREFIX}{namespace}/{name}",
            "",
            "endpoints",
            namespace,
            _endpoints(service, pods, owner),
        )
        slice_name = f"{name}-slice"
        self._write(
            f"{SLICES_PREFIX}{namespace}/{slice_name}",
            "discovery.k8s.io",
            "endpointslices",
            namespace,
            _slice(service, slice_name, pods, owner),
        )
        return None

    def _write(self, key: str, group: str, plural: str, namespace: str, desired: dict[str, Any]) -> None:
        current = self._store.get(key)
        if current is None:
            self._api.create(group, plural, namespace, desired)
            return
        body = {k: v for k, v in desired.items() if k != "metadata"}
        if all(current.get(k) == v for k, v in body.items()):
            return
        self._api.update(key, {**current, **body})


def _kept(pod: dict[str, Any]) -> dict[str, Any]:
    """The parts of a pod that make its endpoints, in the pod's own shape: a whole decoded pod kept for
    every pod of the cluster was hundreds of containers each for the cyclic garbage collector to walk, a
    cost that grew with the pods stored."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    return {
        "metadata": {
            key: metadata[key]
            for key in ("name", "namespace", "uid", "labels", "deletionTimestamp")
            if key in metadata
        },
        "spec": {
            "nodeName": spec.get("nodeName"),
            **{key: spec[key] for key in ("hostname", "subdomain") if spec.get(key)},
            "containers": [{"ports": c["ports"]} for c in spec.get("containers") or [] if c.get("ports")],
        },
        "status": {
            "podIP": status.get("podIP"),
            "conditions": [c for c in status.get("conditions") or [] if c.get("type") == "Ready"],
        },
    }


def _labels(pod: dict[str, Any] | None) -> dict[str, str]:
    return ((pod or {}).get("metadata") or {}).get("labels") or {}


def _pairs(namespace: str, pod: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    return [(namespace, k, v) for k, v in _labels(pod).items()]


def _counts_ready(service: dict[str, Any], pod: dict[str, Any]) -> bool:
    """A pod is a ready endpoint when it is Ready, or whatever its state when the Service publishes
    not-ready addresses (KubeRay's headless head Service does, so the dashboard stays reachable while a
    SidecarMode submitter container has ended)."""
    return bool((service.get("spec") or {}).get("publishNotReadyAddresses")) or _ready(pod)


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _target_port(port: dict[str, Any], pod: dict[str, Any]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for container_port in container.get("ports") or []:
            if container_port.get("name") == target:
                return int(container_port["containerPort"])
    return None


def _hostname(pod: dict[str, Any], service: dict[str, Any]) -> dict[str, str]:
    """The pod's hostname, where the pod names the Service as its subdomain (its DNS name under it)."""
    spec = pod.get("spec") or {}
    if spec.get("hostname") and spec.get("subdomain") == service["metadata"]["name"]:
        return {"hostname": spec["hostname"]}
    return {}


def _address(pod: dict[str, Any], service: dict[str, Any]) -> dict[str, Any]:
    metadata = pod["metadata"]
    return {
        "ip": pod["status"]["podIP"],
        **_hostname(pod, service),
        "nodeName": (pod.get("spec") or {}).get("nodeName"),
        "targetRef": {
            "kind": "Pod",
            "namespace": metadata["namespace"],
            "name": metadata["name"],
            "uid": metadata.get("uid"),
        },
    }


def _endpoints(service: dict[str, Any], pods: list[dict[str, Any]], owner: dict[str, Any]) -> dict[str, Any]:
    subsets = []
    for port in service["spec"].get("ports") or []:
        ready: list[dict[str, Any]] = []
        not_ready: list[dict[str, Any]] = []
        for pod in pods:
            if _target_port(port, pod) is None:
                continue
            (ready if _counts_ready(service, pod) else not_ready).append(_address(pod, service))
        if not ready and not not_ready:
            continue
        subset: dict[str, Any] = {"ports": [_endpoint_port(port, pods)]}
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        subsets.append(subset)
    metadata = {"name": service["metadata"]["name"], "labels": dict(service["metadata"].get("labels") or {})}
    metadata["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata, "subsets": subsets}


def _endpoint_port(port: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    number = next((n for n in (_target_port(port, pod) for pod in pods) if n is not None), port.get("port"))
    out: dict[str, Any] = {"port": number, "protocol": port.get("protocol", "TCP")}
    if port.get("name"):
        out["name"] = port["name"]
    return out


def _slice(
    service: dict[str, Any], name: str, pods: list[dict[str, Any]], owner: dict[str, Any]
) -> dict[str, Any]:
    ports = [_endpoint_port(port, pods) for port in service["spec"].get("ports") or []]
    endpoints = [
        {
            "addresses": [pod["status"]["podIP"]],
            **_hostname(pod, service),
            "conditions": {
                "ready": _counts_ready(service, pod),
                "serving": _counts_ready(service, pod),
                "terminating": False,
            },
            "nodeName": (pod.get("spec") or {}).get("nodeName"),
            "targetRef": _address(pod, service)["targetRef"],
        }
        for pod in pods
    ]
    labels = {
        **(service["metadata"].get("labels") or {}),
        "kubernetes.io/service-name": service["metadata"]["name"],
        "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
    }
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": labels, "ownerReferences": [owner]},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    }
