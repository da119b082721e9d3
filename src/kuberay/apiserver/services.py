"""The v1 services: each RPC as a coroutine from a request dict to a response dict (proto field names),
talking to Kubernetes through the runtime client, failing with `errors.UserError` as upstream does.

Lists pass `limit` and the page token straight to the Kubernetes list (its `continue`), so a page token is
good for as long as Kubernetes keeps it (410 after compaction).
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from kuberay.apiserver import clusters, errors, jobs, rayservices, submissions, templates, volumes
from kuberay.apiserver.backend import Backend, Handler
from kuberay.rayresources import RAYCLUSTER, RAYJOB, RAYSERVICE
from kuberay.runtime import errors as kube_errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import CONFIG_MAP, Resource
from kubesemantics import times

Object = dict[str, Any]
KubeHandler = Callable[[Client, Object], Awaitable[Object]]

EVENT = Resource("events.k8s.io/v1", "Event", "events")
MANAGED_SELECTOR = f"{clusters.MANAGED_BY_LABEL}={clusters.MANAGED_BY}"
NAMESPACE_EMPTY = "Namespace is empty. Please specify a valid value."


def _now() -> str:
    return times.go_string(datetime.datetime.now(datetime.UTC))


def _require(value: str, message: str) -> None:
    if not value:
        raise errors.invalid_input(message)


_KUBE_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,  # what the caller passed on was refused (a page token not Kubernetes')
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    410: grpc.StatusCode.OUT_OF_RANGE,  # a page token Kubernetes no longer keeps
}


def _wrap_kube(error: kube_errors.KubeError, context: str) -> errors.UserError:
    """A Kubernetes failure the way upstream's `util.Wrap` of a client-go error comes out (`<context>:
    <error>`, gRPC Unknown), unless the API server's answer maps to a code of its own: RBAC's refusal is
    PermissionDenied here, so a caller sees why."""
    return errors.UserError(_KUBE_CODES.get(error.status, grpc.StatusCode.UNKNOWN), context, [str(error)])


# --- compute templates ---------------------------------------------------------------------------------


async def _get_template(client: Client, name: str, namespace: str) -> Object:
    try:
        return await client.get(CONFIG_MAP, name, namespace)
    except kube_errors.NotFoundError as e:
        raise errors.not_found(f"Compute template {name} not found", e) from e
    except kube_errors.KubeError as e:
        raise _wrap_kube(e, "Get compute template failed") from e


async def create_compute_template(client: Client, request: Object) -> Object:
    try:
        templates.validate_create(request)
    except errors.UserError as e:
        raise e.wrap("Validate compute template runtime request failed.") from None
    template = request["compute_template"]
    try:
        await client.get(CONFIG_MAP, template["name"], template["namespace"])
    except kube_errors.NotFoundError:
        pass
    except kube_errors.KubeError as e:
        raise _wrap_kube(e, "Get compute template failed").wrap("Create compute template failed.") from e
    else:
        raise errors.already_exists(
            f"Compute template with name {template['name']} already exists in namespace {template['namespace']}"
        ).wrap("Create compute template failed.")
    try:
        created = await client.create(CONFIG_MAP, templates.to_config_map(template))
    except kube_errors.KubeError as e:
        raise errors.internal(
            f"Failed to create a compute runtime for ({template['namespace']}/{template['name']})", e
        ).wrap("Create compute template failed.") from e
    return templates.from_config_map(created)


async def get_compute_template(client: Client, request: Object) -> Object:
    _require(request.get("name", ""), "Compute template name is empty. Please specify a valid value.")
    _require(request.get("namespace", ""), NAMESPACE_EMPTY)
    try:
        return templates.from_config_map(await _get_template(client, request["name"], request["namespace"]))
    except errors.UserError as e:
        raise e.wrap("Get compute template failed.") from None


async def _list_templates(client: Client, namespace: str | None, request: Object, context: str) -> Object:
    try:
        page = await client.list(CONFIG_MAP, namespace, label_selector=templates.SELECTOR,
                                 limit=int(request.get("limit", 0)), continue_token=request.get("continue"))  # fmt: skip
    except kube_errors.KubeError as e:
        raise _wrap_kube(e, "List compute templates failed").wrap(context) from e
    return {
        "compute_templates": [templates.from_config_map(c) for c in page.items],
        "continue": page.continue_token,
    }


async def list_compute_templates(client: Client, request: Object) -> Object:
    _require(request.get("namespace", ""), NAMESPACE_EMPTY)
    context = f"List compute templates in namespace {request['namespace']} failed."
    return await _list_templates(client, request["namespace"], request, context)


async def list_all_compute_templates(client: Client, request: Object) -> Object:
    # Upstream lists namespaces and then each namespace; one cluster-wide list is the same set, and pages.
    return await _list_templates(
        client, None, request, "List all compute templates from all namespaces failed."
    )


async def delete_compute_template(client: Client, request: Object) -> Object:
    _require(request.get("name", ""), "Compute template name is empty. Please specify a valid value.")
    _require(request.get("namespace", ""), NAMESPACE_EMPTY)
    name, namespace = request["name"], request["namespace"]
    try:
        await _get_template(client, name, namespace)
    except errors.UserError as e:
        raise e.wrap("Get compute template failure") from None
    try:
        await client.delete(CONFIG_MAP, name, namespace)
    except kube_errors.KubeError as e:
        raise errors.internal(f"failed to delete compute template {name}.", e) from e
    return {}


async def _templates_for(client: Client, spec: Object, namespace: str, owner: str) -> dict[str, Object]:
    found: dict[str, Object] = {}
    for name in clusters.template_names(spec):
        try:
            found[name] = templates.from_config_map(await _get_template(client, name, namespace))
        except errors.UserError as e:
            cause = RuntimeError(
                f"Cannot get compute template for name '{name}' in namespace '{namespace}', error: {e}"
            )
            raise errors.internal(
                f"Failed to populate compute template for ({namespace}/{owner})", cause
            ) from None
    return found


# --- managed custom resources --------------------------------------------------------------------------


async def _get_managed(client: Client, resource: Resource, name: str, namespace: str, label: str) -> Object:
    try:
        obj = await client.get(resource, name, namespace)
    except kube_errors.NotFoundError as e:
        raise errors.not_found(f"{label} {name} not found", e) from e
    except kube_errors.KubeError as e:
        raise _wrap_kube(e, f"Get {label} failed") from e
    if ((obj.get("metadata") or {}).get("labels") or {}).get(
        clusters.MANAGED_BY_LABEL
    ) != clusters.MANAGED_BY:
        # Upstream's message says RayCluster for jobs too.
        kind = "RayService" if resource is RAYSERVICE else "RayCluster"
        raise errors.unknown(f"{kind} with name {name} not managed by {clusters.MANAGED_BY}")
    return obj


async def _list_managed(client: Client, resource: Resource, namespace: str | None, token: str, limit: int,
                        context: str) -> tuple[list[Object], str]:  # fmt: skip
    try:
        page = await client.list(resource, namespace, label_selector=MANAGED_SELECTOR, limit=limit,
                                 continue_token=token or None)  # fmt: skip
    except kube_errors.KubeError as e:
        raise _wrap_kube(e, context) from e
    return page.items, page.continue_token


async def _events(client: Client, name: str, namespace: str) -> list[Object]:
    """The Events about an object; upstream only logs a failure here, and so do we (an empty list)."""
    try:
        page = await client.list(EVENT, namespace, field_selector=f"regarding.name={name}")
    except kube_errors.KubeError:
        return []
    return page.items


async def _delete_managed(
    client: Client, resource: Resource, request: Object, label: str, messages: tuple[str, str, str]
) -> Object:
    name_empty, get_failure, delete_failure = messages
    _require(request.get("name", ""), name_empty)
    _require(request.get("namespace", ""), NAMESPACE_EMPTY)
    name, namespace = request["name"], request["namespace"]
    try:
        await _get_managed(client, resource, name, namespace, label)
    except errors.UserError as e:
        raise e.wrap(get_failure) from None
    try:
        await client.delete(resource, name, namespace)
    except kube_errors.KubeError as e:
        raise errors.internal(delete_failure.format(name), e) from e
    return {}


async def _create(client: Client, resource: Resource, obj: Object, failure: str) -> Object:
    try:
        return await client.create(resource, obj)
    except kube_errors.AlreadyExistsError as e:
        meta = obj["metadata"]
        raise errors.already_exists(
            f"{resource.kind} {meta['namespace']}/{meta['name']} already exists"
        ) from e
    except kube_errors.KubeError as e:
        raise errors.internal(failure.format(obj["metadata"]["namespace"], obj["metadata"]["name"]), e) from e


def _built(build: Callable[[], Object], what: str) -> Object:
    """A builder's object; a volume it refuses is upstream's InvalidArgument "Failed to create a Ray <what>"."""
    try:
        return build()
    except volumes.VolumeSpecError as e:
        raise errors.UserError(
            grpc.StatusCode.INVALID_ARGUMENT, f"Failed to create a Ray {what}", [str(e)]
        ) from e


# --- clusters -------------------------------------------------------------------------------------------


async def _cluster_out(client: Client, obj: Object) -> Object:
    meta = obj["metadata"]
    return clusters.from_raycluster(obj, await _events(client, meta["name"], meta["namespace"]))


async def create_cluster(client: Client, request: Object) -> Object:
    try:
        clusters.validate_create(request)
    except errors.UserError as e:
        raise e.wrap("Validate create cluster request failed.") from None
    cluster = request["cluster"]
    try:
        found = await _templates_for(client, cluster["cluster_spec"], cluster["namespace"], cluster["name"])
        created = await _create(client, RAYCLUSTER, _built(lambda: clusters.to_raycluster(cluster, found, _now()), "cluster"),
                                "Failed to create a cluster for ({}/{})")  # fmt: skip
    except errors.UserError as e:
        raise e.wrap("Create Cluster failed.") from None
    return await _cluster_out(client, created)


async def get_cluster(client: Client, request: Object) -> Object:
    _require(request.get("name", ""), "Cluster name is empty. Please specify a valid value.")
    _require(request.get("namespace", ""), NAMESPACE_EMPTY)
    try:
        obj = await _get_managed(client, RAYCLUSTER, request["name"], request["namespace"], "Cluster")
    except errors.UserError as e:
        raise e.wrap("Get cluster failed.") from None
    return await _cluster_out(client, obj)


async def _list_clusters(client: Client, namespace: str | None, request: Object, context: str) -> Object:
    items, token = await _list_managed(client, RAYCLUSTER, namespace, request.get("continue", ""),
                                       int(request.get("limit", 0)), context)  # fmt: skip
    return {"clusters": [await _cluster_out(client, obj) for obj in items], "continue": token}


async def list_cluster(client: Client, request: Object) -> Object:
    _require(request.get("namespace", ""), NAMESPACE_EMPTY)
    return await _list_clusters(client, request["namespace"], request, "List clusters failed.")


async def list_all_clusters(client: Client, request: Object) -> Object:
    return await _list_clusters(client, None, request, "List clusters from all namespaces failed.")


async def delete_cluster(client: Client, request: Object) -> Object:
    messages = ("Cluster name is empty. Please specify a valid value.", "Get cluster failure",
                "Failed to delete cluster {}.")  # fmt: skip
    return await _delete_managed(client, RAYCLUSTER, request, "Cluster", messages)


# --- jobs -----------------------------------------------------------------------------------------------


async def create_ray_job(client: Client, request: Object) -> Object:
    try:
        jobs.validate_create(request)
    except errors.UserError as e:
        raise e.wrap("Validate job request failed.") from None
    job = request["job"]
    try:
        found = (await _templates_for(client, job["cluster_spec"], job["namespace"], job.get("job_id", ""))
                 if job.get("cluster_spec") else {})  # fmt: skip
        created = await _create(
            client,
            RAYJOB,
            _built(lambda: jobs.to_rayjob(job, found), "Job"),
            "Failed to create a job for ({}/{})",
        )
    except errors.UserError as e:
        raise e.wrap("Create Job failed.") from None
    return jobs.from_rayjob(created)


async def get_ray_job(client: Client, request: Object) -> Object:
    _require(request.get("name", ""), "job name is empty. Please specify a valid value.")
    _require(request.get("namespace", ""), "job namespace is empty. Please specify a valid value.")
    try:
        obj = await _get_managed(client, RAYJOB, request["name"], request["namespace"], "Job")
    except errors.UserError as e:
        raise e.wrap("Get cluster failed.") from None
    return jobs.from_rayjob(obj)


async def _list_jobs(client: Client, namespace: str | None, request: Object) -> Object:
    items, token = await _list_managed(client, RAYJOB, namespace, request.get("continue", ""),
                                       int(request.get("limit", 0)), "List jobs failed.")  # fmt: skip
    return {"jobs": [jobs.from_rayjob(obj) for obj in items], "continue": token}


async def list_ray_jobs(client: Client, request: Object) -> Object:
    _require(request.get("namespace", ""), "job namespace is empty. Please specify a valid value.")
    return await _list_jobs(client, request["namespace"], request)


async def list_all_ray_jobs(client: Client, request: Object) -> Object:
    return await _list_jobs(client, None, request)


async def delete_ray_job(client: Client, request: Object) -> Object:
    messages = (
        "job name is empty. Please specify a valid value.",
        "Get job failure",
        "Failed to delete cluster {}.",
    )
    if not request.get("namespace") and request.get("name"):
        raise errors.invalid_input("job namespace is empty. Please specify a valid value.")
    return await _delete_managed(client, RAYJOB, request, "Job", messages)


# --- services -------------------------------------------------------------------------------------------


async def _service_out(client: Client, obj: Object) -> Object:
    """The service with its Events and, as upstream shows them, those of its active cluster."""
    meta = obj["metadata"]
    events = await _events(client, meta["name"], meta["namespace"])
    active = ((obj.get("status") or {}).get("activeServiceStatus") or {}).get("rayClusterName")
    if active:
        events += await _events(client, active, meta["namespace"])
    return rayservices.from_rayservice(obj, events)


async def create_ray_service(client: Client, request: Object) -> Object:
    try:
        rayservices.validate(request, update=False)
    except errors.UserError as e:
        raise e.wrap("Validate create service request failed.") from None
    service = request["service"]
    try:
        found = await _templates_for(client, service["cluster_spec"], service["namespace"], service["name"])
        obj = _built(lambda: rayservices.to_rayservice(service, found), "Service")
        obj["metadata"]["annotations"][clusters.CREATION_TIMESTAMP_ANNOTATION] = _now()
        created = await _create(client, RAYSERVICE, obj, "Failed to create service for ({}/{})")
    except errors.UserError as e:
        raise e.wrap("Create ray service failed.") from None
    return await _service_out(client, created)


async def update_ray_service(client: Client, request: Object) -> Object:
    try:
        rayservices.validate(request, update=True)
    except errors.UserError as e:
        raise e.wrap("Validate update service request failed.") from None
    service = request["service"]
    name, namespace = service["name"], service["namespace"]
    try:
        try:
            old = await _get_managed(client, RAYSERVICE, name, namespace, "Service")
        except errors.UserError as e:
            raise e.wrap(f"Update service fail, no service named: {name} ") from None
        found = await _templates_for(client, service["cluster_spec"], namespace, name)
        obj = _built(lambda: rayservices.to_rayservice(service, found), "Service")
        obj["metadata"]["annotations"][rayservices.UPDATE_TIMESTAMP_ANNOTATION] = _now()
        obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        try:
            updated = await client.update(RAYSERVICE, obj)
        except kube_errors.KubeError as e:
            raise errors.internal(f"Failed to update service for ({namespace}/{name})", e) from e
    except errors.UserError as e:
        raise e.wrap("Update ray service failed.") from None
    return await _service_out(client, updated)


async def get_ray_service(client: Client, request: Object) -> Object:
    _require(request.get("name", ""), "ray service name is empty. Please specify a valid value.")
    _require(request.get("namespace", ""), "ray service namespace is empty. Please specify a valid value.")
    try:
        obj = await _get_managed(client, RAYSERVICE, request["name"], request["namespace"], "Service")
    except errors.UserError as e:
        raise e.wrap("get ray service failed") from None
    return await _service_out(client, obj)


async def _list_services(client: Client, namespace: str | None, request: Object, context: str) -> Object:
    items, token = await _list_managed(client, RAYSERVICE, namespace, request.get("page_token", ""),
                                       int(request.get("page_size", 0)), context)  # fmt: skip
    return {"services": [await _service_out(client, obj) for obj in items], "total_size": len(items),
            "next_page_token": token}  # fmt: skip


async def list_ray_services(client: Client, request: Object) -> Object:
    _require(request.get("namespace", ""), "ray service namespace is empty. Please specify a valid value.")
    return await _list_services(client, request["namespace"], request, "failed to list rayservice.")


async def list_all_ray_services(client: Client, request: Object) -> Object:
    return await _list_services(client, None, request, "list all services failed.")


async def delete_ray_service(client: Client, request: Object) -> Object:
    messages = ("ray service name is empty. Please specify a valid value.", "delete ray service failure",
                "failed to delete ray service {}.")  # fmt: skip
    if request.get("name") and not request.get("namespace"):
        raise errors.invalid_input("ray service namespace is empty. Please specify a valid value.")
    return await _delete_managed(client, RAYSERVICE, request, "Service", messages)


def _on_kube(handler: KubeHandler) -> Handler:
    async def call(backend: Backend, request: Object) -> Object:
        return await handler(backend.kube, request)

    return call


_KUBE_HANDLERS: dict[str, KubeHandler] = {
    "/proto.ComputeTemplateService/CreateComputeTemplate": create_compute_template,
    "/proto.ComputeTemplateService/GetComputeTemplate": get_compute_template,
    "/proto.ComputeTemplateService/ListComputeTemplates": list_compute_templates,
    "/proto.ComputeTemplateService/ListAllComputeTemplates": list_all_compute_templates,
    "/proto.ComputeTemplateService/DeleteComputeTemplate": delete_compute_template,
    "/proto.ClusterService/CreateCluster": create_cluster,
    "/proto.ClusterService/GetCluster": get_cluster,
    "/proto.ClusterService/ListCluster": list_cluster,
    "/proto.ClusterService/ListAllClusters": list_all_clusters,
    "/proto.ClusterService/DeleteCluster": delete_cluster,
    "/proto.RayJobService/CreateRayJob": create_ray_job,
    "/proto.RayJobService/GetRayJob": get_ray_job,
    "/proto.RayJobService/ListRayJobs": list_ray_jobs,
    "/proto.RayJobService/ListAllRayJobs": list_all_ray_jobs,
    "/proto.RayJobService/DeleteRayJob": delete_ray_job,
    "/proto.RayServeService/CreateRayService": create_ray_service,
    "/proto.RayServeService/UpdateRayService": update_ray_service,
    "/proto.RayServeService/GetRayService": get_ray_service,
    "/proto.RayServeService/ListRayServices": list_ray_services,
    "/proto.RayServeService/ListAllRayServices": list_all_ray_services,
    "/proto.RayServeService/DeleteRayService": delete_ray_service,
}

HANDLERS: dict[str, Handler] = {**{k: _on_kube(v) for k, v in _KUBE_HANDLERS.items()}, **submissions.HANDLERS}
