"""The Gateway API objects of a RayService upgraded with `NewClusterWithIncrementalUpgrade` (upstream
`createGateway`, `createHTTPRoute` in `rayservice_controller.go`): one Gateway `<rayservice>-gateway` with a
single HTTP listener on port 80, and one HTTPRoute `<rayservice>-httproute` sending `/` to the active
cluster's serve Service and, during an upgrade, the pending one's, by weight.

Pure builders plus the comparison that decides whether an existing object needs an update.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.rayservice import RayService
from kuberay.builders import ownership

JSON = dict[str, Any]
GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"


def gateway_name(service_name: str) -> str:
    return service_name + constants.GATEWAY_SUFFIX


def route_name(service_name: str) -> str:
    return service_name + constants.HTTP_ROUTE_SUFFIX


def build_gateway(service: RayService, gateway_class: str) -> JSON:
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {
            "name": gateway_name(service.name),
            "namespace": service.namespace,
            "ownerReferences": ownership.controlled_by(service),
        },
        "spec": {
            "gatewayClassName": gateway_class,
            "listeners": [
                {
                    "name": constants.GATEWAY_LISTENER_PORT_NAME,
                    "protocol": "HTTP",
                    "port": constants.DEFAULT_GATEWAY_LISTENER_PORT,
                }
            ],
        },
    }


def build_http_route(service: RayService, backends: list[tuple[str, int, int]]) -> JSON:
    """`backends`: (cluster name, serve port, weight) of the active cluster, then the pending one."""
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {
            "name": route_name(service.name),
            "namespace": service.namespace,
            "ownerReferences": ownership.controlled_by(service),
        },
        "spec": {
            "parentRefs": [{"name": gateway_name(service.name), "namespace": service.namespace}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [
                        {
                            "name": cluster + constants.SERVE_SERVICE_SUFFIX,
                            "namespace": service.namespace,
                            "port": port,
                            "weight": weight,
                        }
                        for cluster, port, weight in backends
                    ],
                }
            ],
        },
    }


def gateway_differs(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Class name, or any listener's name, protocol or port."""
    old, new = existing.get("spec") or {}, desired["spec"]
    if old.get("gatewayClassName") != new["gatewayClassName"]:
        return True
    keys = ("name", "protocol", "port")
    listeners = [tuple(listener.get(k) for k in keys) for listener in old.get("listeners") or ()]
    return listeners != [tuple(listener.get(k) for k in keys) for listener in new["listeners"]]


def route_differs(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Hostnames, parents, matches, filters, or a backend's name, namespace, weight (default 1) or port."""
    old, new = existing.get("spec") or {}, desired["spec"]
    if (old.get("hostnames") or []) != (new.get("hostnames") or []):
        return True
    parents = [(p.get("name"), p.get("namespace")) for p in old.get("parentRefs") or ()]
    if parents != [(p.get("name"), p.get("namespace")) for p in new["parentRefs"]]:
        return True
    old_rules, new_rules = old.get("rules") or [], new["rules"]
    if len(old_rules) != len(new_rules):
        return True
    for before, after in zip(old_rules, new_rules, strict=True):
        if (before.get("matches") or []) != (after.get("matches") or []):
            return True
        if (before.get("filters") or []) != (after.get("filters") or []):
            return True
        if _backends(before) != _backends(after):
            return True
    return False


def _backends(rule: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (b.get("name"), b.get("namespace"), b.get("weight", 1), b.get("port"))
        for b in rule.get("backendRefs") or ()
    ]


def route_weights(route: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(backend Service name, weight) of the route's first rule."""
    rules = (route.get("spec") or {}).get("rules") or [{}]
    return [(b.get("name", ""), int(b.get("weight", 1))) for b in rules[0].get("backendRefs") or ()]


def gateway_ready(gateway: Mapping[str, Any]) -> bool:
    conditions = {
        c.get("type"): c.get("status") for c in (gateway.get("status") or {}).get("conditions") or ()
    }
    return conditions.get("Accepted") == "True" and conditions.get("Programmed") == "True"


def route_ready(route: Mapping[str, Any], gateway: str, namespace: str) -> bool:
    for parent in (route.get("status") or {}).get("parents") or ():
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gateway or ref.get("namespace", namespace) != namespace:
            continue
        conditions = {c.get("type"): c.get("status") for c in parent.get("conditions") or ()}
        if conditions.get("Accepted") == "True" and conditions.get("ResolvedRefs") == "True":
            return True
    return False
