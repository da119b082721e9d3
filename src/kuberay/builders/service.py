"""The Services in front of a Ray cluster: the head Service (of a RayCluster, and the copies a RayJob or a
RayService owns), the serve Service (of a RayCluster or of a RayService) and the headless Service of
multi-host worker groups.

Invariants, all upstream's (`ray-operator/controllers/ray/common/service.go`):

- Service ports come from the head template's Ray container (`containers[0]`): each named port under its
  name, an unnamed one as `<containerPort>-port` (a later duplicate wins); no ports at all means the five
  defaults; `metrics: 8080` is always added when missing.
- The head Service selects the head pod by five labels (the user may override a value only through the
  head template's `app.kubernetes.io/name` label), is headless unless it is not of type ClusterIP or the
  operator runs with ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE, and lists its ports sorted by name.
- A user's `headService` / `serveService` is deep-copied; its selector is always replaced, the operator's
  labels win over the user's, the namespace is forced and the name and type are defaulted.
- Where Go iterates a map (default-port order of a custom head Service, serve ports) we sort by name, so a
  build is deterministic.
- Empty label and annotation maps are left out, as Go's `omitempty` leaves them out on the wire.
"""

from __future__ import annotations

import copy
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.meta import KubeObject
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService, RayServiceUpgradeType
from kuberay.builders import names, ownership
from kuberay.builders.errors import BuildError

JSON = dict[str, Any]

DEFAULT_PORTS: dict[str, int] = {
    constants.CLIENT_PORT_NAME: constants.DEFAULT_CLIENT_PORT,
    constants.GCS_SERVER_PORT_NAME: constants.DEFAULT_GCS_SERVER_PORT,
    constants.DASHBOARD_PORT_NAME: constants.DEFAULT_DASHBOARD_PORT,
    constants.METRICS_PORT_NAME: constants.DEFAULT_METRICS_PORT,
    constants.SERVING_PORT_NAME: constants.DEFAULT_SERVING_PORT,
}
NO_SERVE_PORT_MESSAGE = (
    "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') in the Ray head "
    "container; otherwise, the Kubernetes service for Ray Serve will not be created."
)


class ServiceBuildError(BuildError):
    """The Service cannot be built from the object (the message is upstream's)."""


def service_ports(cluster: RayCluster) -> dict[str, int]:
    """`getServicePorts`: port name -> number, from the head template's Ray container."""
    containers = (cluster.spec.head_group_spec.template.get("spec") or {}).get("containers") or []
    if not containers:
        raise ServiceBuildError(
            f"RayCluster {cluster.namespace}/{cluster.name}: spec.headGroupSpec.template.spec.containers is empty"
        )
    ports: dict[str, int] = {}
    for port in containers[constants.RAY_CONTAINER_INDEX].get("ports") or ():
        number = int(port.get("containerPort", 0))
        ports[port.get("name") or f"{number}-port"] = number
    if not ports:
        ports = dict(DEFAULT_PORTS)
    ports.setdefault(constants.METRICS_PORT_NAME, constants.DEFAULT_METRICS_PORT)
    return ports


def dashboard_port(cluster: RayCluster) -> int:
    """The head Service's `dashboard` port (the Ingress and Route backend), 8265 by default."""
    return service_ports(cluster).get(constants.DASHBOARD_PORT_NAME, constants.DEFAULT_DASHBOARD_PORT)


def head_service_name(cluster: RayCluster) -> str:
    custom = cluster.spec.head_group_spec.head_service or {}
    return names.head_service_name(cluster.name, {"headGroupSpec": {"headService": custom}})


def head_service_labels(cluster: RayCluster) -> dict[str, str]:
    """`HeadServiceLabels`: the labels that select a cluster's head pod."""
    return {
        constants.RAY_CLUSTER_LABEL: cluster.name,
        constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
        constants.RAY_ID_LABEL: names.identifier(cluster.name, constants.HEAD_NODE),
        constants.KUBERNETES_APPLICATION_NAME_LABEL: constants.APPLICATION_NAME,
        constants.KUBERNETES_CREATED_BY_LABEL: constants.COMPONENT_NAME,
    }


def build_head_service(cluster: RayCluster, *, cluster_ip_service: bool = False) -> JSON:
    """The head Service of a RayCluster (`BuildServiceForHeadPod` as the RayCluster controller calls it).

    `cluster_ip_service` is the operator's ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE: keep a cluster IP even for
    a ClusterIP Service."""
    template_labels = (cluster.spec.head_group_spec.template.get("metadata") or {}).get("labels") or {}
    overrides = {
        key: template_labels[key]
        for key in (constants.KUBERNETES_APPLICATION_NAME_LABEL,)
        if key in template_labels
    }
    service = _head_service(
        cluster, overrides, dict(cluster.spec.head_service_annotations or {}), cluster_ip_service
    )
    service["metadata"]["ownerReferences"] = ownership.controlled_by(cluster)
    return service


def build_head_service_for_owner(
    owner: RayJob | RayService, cluster: RayCluster, *, cluster_ip_service: bool = False
) -> JSON:
    """The head Service a RayJob or RayService owns (`<owner>-head-svc`): the cluster's head Service
    without user labels or annotations, renamed and relabelled after its owner, so that it survives the
    switch to a new cluster."""
    service = _head_service(cluster, {}, {}, cluster_ip_service)
    metadata = service["metadata"]
    metadata["name"] = names.head_service_name(owner.name, {})
    metadata["namespace"] = owner.namespace
    metadata["labels"] = {
        constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: owner.name,
        constants.RAY_ORIGINATED_FROM_CRD_LABEL: owner.kind,
        constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
        constants.RAY_ID_LABEL: names.identifier(owner.name, constants.HEAD_NODE),
    }
    metadata["ownerReferences"] = ownership.controlled_by(owner)
    return service


def _head_service(
    cluster: RayCluster,
    label_overrides: dict[str, str],
    annotations: dict[str, str],
    cluster_ip_service: bool,
) -> JSON:
    selector = {key: label_overrides.get(key, value) for key, value in head_service_labels(cluster).items()}
    service_type = cluster.spec.head_group_spec.service_type or ""
    ports = [
        {"name": name, "port": number, "appProtocol": constants.DEFAULT_SERVICE_APP_PROTOCOL}
        for name, number in sorted(service_ports(cluster).items())
    ]
    custom = cluster.spec.head_group_spec.head_service
    if custom is not None:
        service = _from_user_service(custom, selector, labels=dict(selector))
        user_annotations = service["metadata"].get("annotations") or {}
        _set_or_drop(service["metadata"], "annotations", {**user_annotations, **annotations})
        service["spec"]["ports"] = [*(service["spec"].get("ports") or []), *ports]
        _default_name_namespace_type(service, head_service_name(cluster), cluster.namespace, service_type)
        return service

    metadata: JSON = {
        "name": head_service_name(cluster),
        "namespace": cluster.namespace,
        "labels": dict(selector),
    }
    _set_or_drop(metadata, "annotations", annotations)
    spec: JSON = {"ports": ports, "selector": selector}
    if service_type:
        spec["type"] = service_type
    if not cluster_ip_service and service_type in ("", "ClusterIP"):
        # At most one head pod, so no load balancing is needed; and its address is published even while
        # its health checks fail, because workers must reach it to join.
        spec["clusterIP"] = "None"
        spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def build_serve_service(cluster: RayCluster) -> JSON:
    """The serve Service of a RayCluster with `ray.io/enable-serve-service: "true"` (`<cluster>-serve-svc`):
    every pod of the cluster, on the head container's `serve` / `serve-*` ports."""
    ports = _serve_ports(cluster)
    if not ports:
        raise ServiceBuildError(NO_SERVE_PORT_MESSAGE)
    return _serve_service(
        name=cluster.name,
        namespace=cluster.namespace,
        crd=constants.RAY_CLUSTER_CRD,
        selector={constants.RAY_CLUSTER_LABEL: cluster.name},
        ports=ports,
        service_type=cluster.spec.head_group_spec.service_type or "",
        owner=cluster,
    )


def is_incremental_upgrade(service: RayService, gates: FeatureGates) -> bool:
    """`IsIncrementalUpgradeEnabled`: the NewClusterWithIncrementalUpgrade strategy, under its gate."""
    strategy = service.spec.upgrade_strategy
    return (
        gates.enabled(Feature.RAY_SERVICE_INCREMENTAL_UPGRADE)
        and strategy is not None
        and strategy.type == RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
    )


def build_rayservice_serve_service(service: RayService, cluster: RayCluster, gates: FeatureGates) -> JSON:
    """The serve Service a RayService owns: `<rayservice>-serve-svc` selecting the ready serve pods of
    `cluster` (its target cluster), or, under incremental upgrade, one `<cluster>-serve-svc` per cluster.

    A user `spec.serveService` (ignored under incremental upgrade) is the starting point: its selector is
    replaced, auto-detected serve ports keep the user's definition of a port of the same name, and when
    nothing is detected the user's ports stay as given."""
    incremental = is_incremental_upgrade(service, gates)
    name = cluster.name if incremental else service.name
    selector = {
        constants.RAY_CLUSTER_LABEL: cluster.name,
        constants.RAY_CLUSTER_SERVING_SERVICE_LABEL: constants.ENABLE_SERVING_SERVICE_TRUE,
    }
    detected = _serve_ports(cluster)
    service_type = service.spec.ray_cluster_config.head_group_spec.service_type or ""
    user_service = service.spec.serve_service
    if user_service is None or incremental:
        if not detected:
            raise ServiceBuildError(NO_SERVE_PORT_MESSAGE)
        return _serve_service(
            name=name,
            namespace=service.namespace,
            crd=constants.RAY_SERVICE_CRD,
            selector=selector,
            ports=detected,
            service_type=service_type,
            owner=service,
        )

    built = _from_user_service(user_service, selector, labels=_serve_labels(name, constants.RAY_SERVICE_CRD))
    if detected:
        user_ports = {port.get("name", ""): port for port in built["spec"].get("ports") or ()}
        built["spec"]["ports"] = [user_ports.get(port["name"], port) for port in detected]
    _default_name_namespace_type(built, _serve_name(name), service.namespace, service_type)
    built["metadata"]["ownerReferences"] = ownership.controlled_by(service)
    return built


def build_headless_service(cluster: RayCluster) -> JSON:
    """The headless Service of a cluster with a multi-host worker group (`<cluster>-headless`): DNS
    records for every worker, ready or not, so the hosts of one replica can find each other."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": cluster.name + constants.HEADLESS_SERVICE_SUFFIX,
            "namespace": cluster.namespace,
            "labels": {constants.RAY_CLUSTER_HEADLESS_SERVICE_LABEL: cluster.name},
            "ownerReferences": ownership.controlled_by(cluster),
        },
        "spec": {
            "selector": {
                constants.RAY_CLUSTER_LABEL: cluster.name,
                constants.RAY_NODE_TYPE_LABEL: constants.WORKER_NODE,
            },
            "clusterIP": "None",
            "type": "ClusterIP",
            "publishNotReadyAddresses": True,
        },
    }


def needs_headless_service(cluster: RayCluster) -> bool:
    """Whether some worker group spans several hosts (`numOfHosts > 1`)."""
    return any(group.num_of_hosts > 1 for group in cluster.spec.worker_group_specs or ())


def rayservice_serve_service_name(service: RayService) -> str:
    """The name of a RayService's own serve Service: its `serveService`'s, else `<rayservice>-serve-svc`."""
    custom = ((service.spec.serve_service or {}).get("metadata") or {}).get("name")
    return str(custom or _serve_name(service.name))


def _serve_name(owner_name: str) -> str:
    return owner_name + constants.SERVE_SERVICE_SUFFIX


def _serve_labels(owner_name: str, crd: str) -> dict[str, str]:
    return {
        constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: owner_name,
        constants.RAY_ORIGINATED_FROM_CRD_LABEL: crd,
        constants.RAY_CLUSTER_SERVING_SERVICE_LABEL: f"{owner_name}-serve",
    }


def _serve_ports(cluster: RayCluster) -> list[JSON]:
    prefix = constants.SERVING_PORT_NAME + "-"
    return [
        {"name": name, "port": number}
        for name, number in sorted(service_ports(cluster).items())
        if name == constants.SERVING_PORT_NAME or name.startswith(prefix)
    ]


def _serve_service(
    *,
    name: str,
    namespace: str,
    crd: str,
    selector: dict[str, str],
    ports: list[JSON],
    service_type: str,
    owner: KubeObject,
) -> JSON:
    spec: JSON = {"ports": ports, "selector": selector}
    if service_type:
        spec["type"] = service_type
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": _serve_name(name),
            "namespace": namespace,
            "labels": _serve_labels(name, crd),
            "ownerReferences": ownership.controlled_by(owner),
        },
        "spec": spec,
    }


def _from_user_service(user: JSON, selector: dict[str, str], *, labels: dict[str, str]) -> JSON:
    service: JSON = {"apiVersion": "v1", "kind": "Service", **copy.deepcopy(user)}
    metadata = service.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    service.setdefault("spec", {})["selector"] = dict(selector)
    return service


def _default_name_namespace_type(service: JSON, name: str, namespace: str, service_type: str) -> None:
    metadata, spec = service["metadata"], service["spec"]
    metadata["name"] = metadata.get("name") or name
    metadata["namespace"] = namespace
    if not spec.get("type") and service_type:
        spec["type"] = service_type


def _set_or_drop(metadata: JSON, key: str, values: dict[str, str]) -> None:
    if values:
        metadata[key] = values
    else:
        metadata.pop(key, None)
