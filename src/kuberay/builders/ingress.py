"""The Ingress to a RayCluster's dashboard (`headGroupSpec.enableIngress: true`).

Upstream (`common/ingress.go`): name `CheckName("<cluster>-head-ingress")`; one rule whose single path
(`ingressOptions.path` or `/`, `pathType` or `Prefix`) goes to the head Service's `dashboard` port; every
cluster annotation is copied onto the Ingress except `kubernetes.io/ingress.class`, which becomes
`spec.ingressClassName` instead (setting both is deprecated and rejected by some controllers).
"""

from __future__ import annotations

import copy
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import names, ownership, service

DEFAULT_PATH = "/"
DEFAULT_PATH_TYPE = "Prefix"


def labels(cluster: RayCluster) -> dict[str, str]:
    """The labels of the head's Ingress and Route."""
    return {
        constants.RAY_CLUSTER_LABEL: cluster.name,
        constants.RAY_ID_LABEL: names.identifier(cluster.name, constants.HEAD_NODE),
        constants.KUBERNETES_APPLICATION_NAME_LABEL: constants.APPLICATION_NAME,
        constants.KUBERNETES_CREATED_BY_LABEL: constants.COMPONENT_NAME,
    }


def build_ingress(cluster: RayCluster) -> dict[str, Any]:
    """The dashboard Ingress of `cluster`."""
    options = cluster.spec.head_group_spec.ingress_options
    path = {
        "path": (options.path if options and options.path is not None else DEFAULT_PATH),
        "pathType": (options.path_type if options and options.path_type else DEFAULT_PATH_TYPE),
        "backend": {
            "service": {
                "name": service.head_service_name(cluster),
                "port": {"number": service.dashboard_port(cluster)},
            }
        },
    }
    rule: dict[str, Any] = {"http": {"paths": [path]}}
    if options and options.host:
        rule = {"host": options.host, **rule}
    spec: dict[str, Any] = {}
    class_name = cluster.annotations.get(constants.INGRESS_CLASS_ANNOTATION)
    if class_name is not None:
        spec["ingressClassName"] = class_name
    spec["rules"] = [rule]
    if options and options.tls:
        spec["tls"] = copy.deepcopy(options.tls)
    metadata: dict[str, Any] = {
        "name": names.check_name(cluster.name + constants.HEAD_INGRESS_SUFFIX),
        "namespace": cluster.namespace,
        "labels": labels(cluster),
    }
    annotations = {
        key: value for key, value in cluster.annotations.items() if key != constants.INGRESS_CLASS_ANNOTATION
    }
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = ownership.controlled_by(cluster)
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": spec}
