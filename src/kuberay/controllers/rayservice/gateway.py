"""The writes of an incremental upgrade (`NewClusterWithIncrementalUpgrade`; upstream
`reconcileGateway`, `reconcileHTTPRoute`, `reconcilePerClusterServeService`, `reconcileServeTargetCapacity`):
the per-cluster serve Services, the Gateway, the HTTPRoute with this pass's weights, and one step of
Serve's `target_capacity`. What to write is decided in `incremental` (and built in `builders.gateway`);
this module reads and writes it.

The Gateway and HTTPRoute are read from the API server on each pass (not cached: their CRDs need not be
installed), created when missing and their spec replaced when it differs. A capacity step waits until
the Gateway and the route are accepted, and the cluster it moves has a ready head.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kuberay.api.raycluster import RayCluster
from kuberay.builders import gateway as gateway_builder
from kuberay.builders import ownership
from kuberay.builders import service as service_builder
from kuberay.controllers import writes
from kuberay.controllers.rayservice import incremental, serving
from kuberay.controllers.rayservice.context import GATEWAY, HTTP_ROUTE, JSON, Pass
from kuberay.controllers.rayservice.serving import serve_port
from kuberay.rayclient.dashboard import DashboardError
from kuberay.runtime import errors
from kuberay.runtime.controller import TemporaryError
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.resources import Resource


async def reconcile_per_cluster_serve_service(p: Pass, cluster: JSON) -> None:
    """`<cluster>-serve-svc`, controlled by the cluster, created once, never updated (the Gateway's backend
    for that cluster)."""
    model = RayCluster.parse(cluster)
    try:
        desired = service_builder.build_rayservice_serve_service(p.model, model, p.ctx.options.gates)
    except service_builder.ServiceBuildError as e:
        raise TemporaryError(str(e)) from e
    desired["metadata"]["ownerReferences"] = ownership.controlled_by(model)
    await writes.reconcile_service(p.ctx.client, p.ctx.caches.services, desired, p.event, update=False)


async def reconcile_gateway(p: Pass, active: JSON | None, pending: JSON | None, pending_ready: bool) -> None:
    """The Gateway, then (once an active cluster exists) the HTTPRoute with this pass's weights; both kept
    on the pass for the capacity step, the weights for the status."""
    options = p.upgrade_options()
    desired = gateway_builder.build_gateway(p.model, options.gateway_class_name)
    p.gateway = await _create_or_update(p, GATEWAY, desired, gateway_builder.gateway_differs)
    if active is None:
        return
    w_active, w_pending = incremental.route_weights(
        p.status, options, pending_exists=pending is not None, pending_ready=pending_ready, now=p.now
    )
    backends = [(active["metadata"]["name"], serve_port(active), w_active)]
    if pending is not None:
        backends.append((pending["metadata"]["name"], serve_port(pending), w_pending))
    route = gateway_builder.build_http_route(p.model, backends)
    p.route = await _create_or_update(p, HTTP_ROUTE, route, gateway_builder.route_differs, article="the ")
    p.route_weights = dict(gateway_builder.route_weights(route))


async def _create_or_update(
    p: Pass,
    resource: Resource,
    desired: JSON,
    differs: Callable[[Mapping[str, Any], Mapping[str, Any]], bool],
    *,
    article: str = "",
) -> JSON | None:
    """A Gateway API object read from the API server: created when missing (`Created<Kind>` /
    `FailedToCreate<Kind>` Events with upstream's messages, which name the HTTPRoute with an `article`
    and the Gateway without), its spec replaced when `differs` says so. The object as read (with the
    desired spec), or None when it was just created."""
    ns, name, kind = p.key.namespace, desired["metadata"]["name"], resource.kind
    created = f"Created {kind} for RayService {ns}/{name}"
    create_failed = f"Failed to create {article}{kind} for RayService {ns}/{name}: {{error}}"
    existing = await p.get_or_none(resource, name)
    if existing is None:
        await writes.recorded(
            lambda: p.ctx.client.create(resource, desired),
            p.event,
            "Create",
            (f"Created{kind}", created),
            (f"FailedToCreate{kind}", create_failed),
            already=errors.AlreadyExistsError,
        )
    elif differs(existing, desired):
        existing["spec"] = desired["spec"]
        await writes.recorded(
            lambda: p.ctx.client.update(resource, existing),
            p.event,
            "Update",
            (f"Updated{kind}", f"Updated the {kind} {ns}/{name}"),
            (f"FailedToUpdate{kind}", f"Failed to update the {kind} {ns}/{name}: {{error}}"),
        )
    return existing


async def reconcile_target_capacity(p: Pass, active: JSON | None, pending: JSON | None) -> None:
    """One step of Serve's `target_capacity` during an upgrade (or its rollback)."""
    if not incremental.capacity_update_needed(p.status):
        return
    ns = p.key.namespace
    if p.gateway is None or not gateway_builder.gateway_ready(p.gateway):
        return
    if p.route is None or not gateway_builder.route_ready(
        p.route, gateway_builder.gateway_name(p.key.name), ns
    ):
        return
    step = incremental.capacity_step(p.status, p.upgrade_options())
    if step is None:
        return
    cluster = active if step.side == incremental.ACTIVE else pending
    if cluster is None or not serving.head_ready(p, cluster):
        return
    name = cluster["metadata"]["name"]
    config = p.ctx.serve_configs.get(str(p.key), name) or p.model.spec.serve_config_v2 or ""
    try:
        client = await serving.dashboard_client(p, cluster)
        await client.update_serve_applications(serving.config_body(config, step.goal))
    except DashboardError as e:
        p.event(WARNING, "FailedToUpdateTargetCapacity",
                f"Failed to update target_capacity of serve applications to the RayCluster {ns}/{name}: {e}",
                "Update")  # fmt: skip
        raise TemporaryError(str(e)) from e
    incremental.entry(p.status, step.side)["targetCapacity"] = step.goal
    p.event(NORMAL, "UpdatedServeTargetCapacity",
            f"Updated target_capacity of serve applications to to the RayCluster {ns}/{name}", "Update")  # fmt: skip
