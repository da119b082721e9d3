"""The OpenShift Route to a RayCluster's dashboard, used instead of an Ingress on OpenShift.

Upstream (`common/openshift.go`): name `CheckRouteName("<cluster>-head-route", <namespace>)`, which keeps
the *first* `51 - len(namespace)` characters so that the generated host `<name>-<namespace>.<domain>`
stays a DNS label; the Ingress's labels; *all* cluster annotations (the ingress class included); the head
Service's `dashboard` port as an integer target port, weight 100, no wildcard.
"""

from __future__ import annotations

from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import ingress, names, ownership, service

ROUTE_API_VERSION = "route.openshift.io/v1"
# 63 characters of a DNS label, minus "-head-" and a 5-character suffix, minus the "-" before the namespace.
_ROUTE_NAME_BUDGET = 51


def route_name(cluster_name: str, namespace: str) -> str:
    """`CheckRouteName("<cluster>-head-route", namespace)`."""
    name = cluster_name + constants.HEAD_ROUTE_SUFFIX
    return names.check_name(name[: max(_ROUTE_NAME_BUDGET - len(namespace), 0)])


def build_route(cluster: RayCluster) -> dict[str, Any]:
    """The dashboard Route of `cluster`."""
    metadata: dict[str, Any] = {
        "name": route_name(cluster.name, cluster.namespace),
        "namespace": cluster.namespace,
        "labels": ingress.labels(cluster),
    }
    if cluster.annotations:
        metadata["annotations"] = dict(cluster.annotations)
    metadata["ownerReferences"] = ownership.controlled_by(cluster)
    return {
        "apiVersion": ROUTE_API_VERSION,
        "kind": "Route",
        "metadata": metadata,
        "spec": {
            "to": {"kind": "Service", "name": service.head_service_name(cluster), "weight": 100},
            "port": {"targetPort": service.dashboard_port(cluster)},
            "wildcardPolicy": "None",
        },
    }
