"""RayServices: the API's `RayService` to the CRD and back, as upstream's APIServer maps them (pure)."""

from __future__ import annotations

from typing import Any

from kuberay.apiserver import clusters, errors
from kuberay.rayresources import RAYSERVICE

Object = dict[str, Any]

UPDATE_TIMESTAMP_ANNOTATION = "ray.io/update-timestamp"


def validate(request: Object, *, update: bool) -> None:
    """Upstream's checks for create and update, with their messages."""
    service = request.get("service")
    if update and not request.get("name"):
        raise errors.invalid_input("Name is empty. Please specify a valid value.")
    if not request.get("namespace"):
        raise errors.invalid_input("Namespace is empty. Please specify a valid value.")
    if not service:
        raise errors.invalid_input("Service is empty, please input a valid payload.")
    if request["namespace"] != service.get("namespace", ""):
        raise errors.invalid_input(
            "The namespace in the request is different from the namespace in the service definition."
        )
    if not service.get("name"):
        raise errors.invalid_input("Service name is empty. Please specify a valid value.")
    if not service.get("user"):
        verb = "updated" if update else "created"
        raise errors.invalid_input(f"User who {verb} the Service is empty. Please specify a valid value.")
    clusters.validate_spec(service.get("cluster_spec"))
    if not service.get("serve_config_V2"):
        raise errors.invalid_input("serve configuration is not defined")


def to_rayservice(service: Object, templates: dict[str, Object]) -> Object:
    spec: Object = {
        "serveConfigV2": service["serve_config_V2"],
        "rayClusterConfig": clusters.cluster_spec(
            service.get("version", ""), None, service["cluster_spec"], templates, serve=True
        ),  # fmt: skip
    }
    for api_name, crd_name in (("service_unhealthy_second_threshold", "serviceUnhealthySecondThreshold"),
                               ("deployment_unhealthy_second_threshold", "deploymentUnhealthySecondThreshold")):  # fmt: skip
        if service.get(api_name, 0) > 0:
            spec[crd_name] = service[api_name]
    labels = {
        clusters.USER_LABEL: service.get("user", ""),
        clusters.APP_NAME_LABEL: clusters.APP_NAME,
        clusters.MANAGED_BY_LABEL: clusters.MANAGED_BY,
    }
    metadata = {
        "name": service["name"],
        "namespace": service["namespace"],
        "labels": labels,
        "annotations": {},
    }
    return {"apiVersion": RAYSERVICE.api_version, "kind": RAYSERVICE.kind, "metadata": metadata, "spec": spec}


def from_rayservice(obj: Object, events: list[Object]) -> Object:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    active = status.get("activeServiceStatus") or {}
    applications = []
    for name, app in sorted((active.get("applicationStatuses") or {}).items()):
        deployments = [{"deployment_name": d, "status": s.get("status", ""), "message": s.get("message", "")}
                       for d, s in sorted((app.get("serveDeploymentStatuses") or {}).items())]  # fmt: skip
        applications.append({"name": name, "status": app.get("status", ""), "message": app.get("message", ""),
                             "serve_deployment_status": deployments})  # fmt: skip
    cluster_spec = spec.get("rayClusterConfig") or {}
    result: Object = {
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "user": (meta.get("labels") or {}).get(clusters.USER_LABEL, ""),
        "version": cluster_spec.get("rayVersion", ""),
        "serve_config_V2": spec.get("serveConfigV2", ""),
        "cluster_spec": clusters.spec_from_crd(cluster_spec),
        "service_unhealthy_second_threshold": spec.get("serviceUnhealthySecondThreshold", 0),
        "deployment_unhealthy_second_threshold": spec.get("deploymentUnhealthySecondThreshold", 0),
        "ray_service_status": {
            "ray_service_events": [clusters.event_from_crd(meta.get("name", ""), e) for e in events],
            "ray_cluster_name": active.get("rayClusterName", ""),
            "ray_cluster_state": (active.get("rayClusterStatus") or {}).get("state", ""),
            "service_endpoint": {},
            "serve_application_status": applications,
        },
        "created_at": meta.get("creationTimestamp"),
        "delete_at": meta.get("deletionTimestamp"),
    }
    return {k: v for k, v in result.items() if v not in (None, "", 0)}
