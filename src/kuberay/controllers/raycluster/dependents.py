"""The objects a RayCluster owns besides its pods, reconciled in the order of `rayClusterReconcile`'s `reconcileFuncs`:
autoscaler ServiceAccount, Role and RoleBinding; Ingress (or the OpenShift Route); the auth Secret; the
head, headless and serve Services; the GCS storage PVC.

All are create-if-missing (upstream never updates them), except the Ingress, whose labels, annotations and
spec are kept as built, and the PVC, whose owner reference follows `deletionPolicy`. Kinds the controller
watches (Services, Secrets, PVCs) are read from the cache (a create the cache has not seen yet answers
AlreadyExists, which is fine); the others are read with the client, as upstream reads them. Each function raises on the error that stops the chain (after its Warning Event).
"""

from __future__ import annotations

import base64
import contextlib
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import autoscaler, gcsft, ingress, ownership, pvc, rbac, route, secret, service
from kuberay.controllers.errors import ReconcileError
from kuberay.controllers.raycluster import status
from kuberay.controllers.raycluster.context import ROUTE, Context
from kuberay.runtime import errors
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import (
    INGRESS,
    PERSISTENT_VOLUME_CLAIM,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    ObjectKey,
    Resource,
)

Obj = Mapping[str, Any]
CREATE, UPDATE, VALIDATE = "Create", "Update", "Validate"


class DependentError(ReconcileError):
    """An owned object could not be made (the message names it)."""


async def _get(ctx: Context, resource: Resource, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return await ctx.client.get(resource, name, namespace)
    except errors.NotFoundError:
        return None


async def _create_with_events(
    ctx: Context, cluster: RayCluster, resource: Resource, obj: Obj, what: str, reason: str
) -> None:
    """Creates `obj` (AlreadyExists is fine) with upstream's `Created<X>` / `FailedToCreate<X>` Events."""
    key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
    try:
        await ctx.client.create(resource, obj)
    except errors.AlreadyExistsError:
        return
    except errors.KubeError as e:
        ctx.event(cluster, WARNING, f"FailedToCreate{reason}", f"Failed creating {what} {key}, {e}", CREATE)
        raise
    ctx.event(cluster, NORMAL, f"Created{reason}", f"Created {what} {key}", CREATE)


async def autoscaler_rbac(ctx: Context, cluster: RayCluster) -> None:
    """ServiceAccount, Role, RoleBinding for the autoscaler sidecar (only with in-tree autoscaling)."""
    if not autoscaler.is_enabled(cluster.spec.dump()):
        return
    account, role, binding = rbac.build_autoscaler_rbac(cluster)
    namespace = cluster.namespace
    account_name = rbac.service_account_name(cluster)
    if await _get(ctx, SERVICE_ACCOUNT, account_name, namespace) is None:
        if rbac.user_service_account(cluster):
            message = (
                "If users specify ServiceAccountName for the head Pod, they need to create a ServiceAccount "
                f"themselves. However, ServiceAccount {account_name} is not found. Please create one. See the PR "
                "description of https://github.com/ray-project/kuberay/pull/1128 for more details."
            )
            ctx.event(
                cluster,
                WARNING,
                "AutoscalerServiceAccountNotFound",
                f"Failed to reconcile RayCluster {namespace}/{cluster.name}. {message}",
                VALIDATE,
            )
            raise DependentError(message)
        await _create_with_events(ctx, cluster, SERVICE_ACCOUNT, account, "service account", "ServiceAccount")
    if await _get(ctx, ROLE, cluster.name, namespace) is None:
        await _create_with_events(ctx, cluster, ROLE, role, "role", "Role")
    if await _get(ctx, ROLE_BINDING, cluster.name, namespace) is None:
        await _create_with_events(ctx, cluster, ROLE_BINDING, binding, "role binding", "RoleBinding")


async def api_served(ctx: Context, resource: Resource) -> bool:
    """Whether the server serves `resource`: a list of one answers (a refusal to list still proves it exists)."""
    try:
        await ctx.client.list(resource, limit=1)
    except errors.NotFoundError:
        return False
    except errors.Forbidden:
        pass
    return True


async def serves_routes(ctx: Context) -> bool:
    """Upstream's OpenShift detection, done on first need rather than at start-up: the server serves
    `route.openshift.io`."""
    if ctx.openshift is None:
        ctx.openshift = await api_served(ctx, ROUTE)
    return ctx.openshift


async def ingress_or_route(ctx: Context, cluster: RayCluster) -> None:
    if cluster.spec.head_group_spec.enable_ingress is not True:
        return
    if not ctx.options.env.use_ingress_on_openshift and await serves_routes(ctx):
        found = await ctx.client.list(
            ROUTE, cluster.namespace, label_selector=f"{constants.RAY_CLUSTER_LABEL}={cluster.name}"
        )
        if not found.items:
            await _create_with_events(ctx, cluster, ROUTE, route.build_route(cluster), "route", "Route")
        return
    desired = ingress.build_ingress(cluster)
    name, namespace = desired["metadata"]["name"], cluster.namespace
    live = await _get(ctx, INGRESS, name, namespace)
    if live is None:
        await _create_with_events(ctx, cluster, INGRESS, desired, "ingress", "Ingress")
        return
    owner = ownership.controller_of(live["metadata"])
    if owner is None or owner.get("uid") != cluster.metadata.uid:
        ctx.event(
            cluster,
            WARNING,
            "FailedToCreateIngress",
            f"Ingress {namespace}/{name} already exists and is not owned by this RayCluster; not modifying it",
            CREATE,
        )
        return
    if "ingressClassName" not in desired["spec"] and "ingressClassName" in live.get("spec", {}):
        desired["spec"]["ingressClassName"] = live["spec"]["ingressClassName"]
    metadata = live["metadata"]
    if (
        (metadata.get("labels") or {}) == desired["metadata"].get("labels", {})
        and (metadata.get("annotations") or {}) == desired["metadata"].get("annotations", {})
        and live.get("spec") == desired["spec"]
    ):
        return
    metadata["labels"] = desired["metadata"].get("labels", {})
    metadata["annotations"] = desired["metadata"].get("annotations", {})
    live["spec"] = desired["spec"]
    try:
        await ctx.client.update(INGRESS, live)
    except errors.KubeError as e:
        ctx.event(
            cluster,
            WARNING,
            "FailedToUpdateIngress",
            f"Failed updating ingress {namespace}/{name}, {e}",
            UPDATE,
        )
        raise
    ctx.event(cluster, NORMAL, "UpdatedIngress", f"Updated ingress {namespace}/{name}", UPDATE)


async def auth_secret(ctx: Context, cluster: RayCluster) -> None:
    if not secret.needs_auth_secret(cluster):
        return
    desired = secret.build_auth_secret(cluster, base64.b64encode(secrets.token_bytes(32)).decode())
    if ctx.secrets.get(ObjectKey(cluster.namespace, desired["metadata"]["name"])) is None:
        with contextlib.suppress(errors.AlreadyExistsError):
            await ctx.client.create(SECRET, desired)


async def head_service(ctx: Context, cluster: RayCluster) -> None:
    found = ctx.services.list(cluster.namespace, status.head_service_selector(cluster.name))
    if len(found) == 1:
        return
    if len(found) > 1:
        listed = " ".join(str(s["metadata"]["name"]) for s in found)
        raise DependentError(f"{len(found)} head service found [{listed}]")
    desired = service.build_head_service(cluster, cluster_ip_service=ctx.options.cluster_ip_head_service)
    if not desired["spec"].get("ports"):
        raise DependentError(f"head service of RayCluster {cluster.namespace}/{cluster.name} has no ports")
    await _create_with_events(ctx, cluster, SERVICE, desired, "service", "Service")


async def headless_service(ctx: Context, cluster: RayCluster) -> None:
    if not service.needs_headless_service(cluster):
        return
    selector = {constants.RAY_CLUSTER_HEADLESS_SERVICE_LABEL: cluster.name}
    if not ctx.services.list(cluster.namespace, selector):
        desired = service.build_headless_service(cluster)
        await _create_with_events(ctx, cluster, SERVICE, desired, "service", "Service")


async def serve_service(ctx: Context, cluster: RayCluster) -> None:
    if cluster.annotations.get(constants.ENABLE_SERVE_SERVICE_ANNOTATION) != "true":
        return
    name = cluster.name + constants.SERVE_SERVICE_SUFFIX
    if ctx.services.get(ObjectKey(cluster.namespace, name)) is not None:
        return
    try:
        desired = service.build_serve_service(cluster)
    except service.ServiceBuildError as e:
        raise DependentError(str(e)) from e
    with contextlib.suppress(errors.AlreadyExistsError):
        await ctx.client.create(SERVICE, desired)


async def gcs_storage_pvc(ctx: Context, cluster: RayCluster) -> None:
    options = cluster.spec.dump().get("gcsFaultToleranceOptions")
    if not gcsft.is_embedded(options):
        return
    namespace = cluster.namespace
    claim = ((options or {}).get("storage") or {}).get("claimName")
    if claim:
        if ctx.pvcs.get(ObjectKey(namespace, claim)) is None:
            ctx.event(
                cluster,
                WARNING,
                "FailedToCreatePVC",
                f'GcsFaultToleranceOptions.Storage.ClaimName "{claim}" not found in namespace {namespace}; '
                "the head Pod will not start until it exists",
                VALIDATE,
            )
        return
    desired = pvc.build_gcs_pvc(cluster)
    name = desired["metadata"]["name"]
    cached = ctx.pvcs.get(ObjectKey(namespace, name))
    if cached is None:
        try:
            await ctx.client.create(PERSISTENT_VOLUME_CLAIM, desired)
        except errors.AlreadyExistsError:
            # Made before the cache saw it (its watch event is on the way): the next pass checks it.
            return
        except errors.KubeError as e:
            ctx.event(
                cluster,
                WARNING,
                "FailedToCreatePVC",
                f"Failed to create GCS storage PVC {namespace}/{name}, {e}",
                CREATE,
            )
            raise
        else:
            ctx.event(cluster, NORMAL, "CreatedPVC", f"Created GCS storage PVC {namespace}/{name}", CREATE)
            return
    live = thaw(cached)
    if differences := pvc.drift(desired, live):
        ctx.event(
            cluster,
            WARNING,
            "FailedToCreatePVC",
            f"GCS storage PVC {namespace}/{name} already exists and cannot be reconfigured in place "
            f"({differences}); delete the PVC to recreate it with the new settings",
            UPDATE,
        )
    owner = ownership.controller_of(live["metadata"])
    controlled = owner is not None and owner.get("uid") == cluster.metadata.uid
    if pvc.is_retained(cluster) and controlled:
        live["metadata"]["ownerReferences"] = [
            r for r in live["metadata"].get("ownerReferences") or () if r.get("controller") is not True
        ]
    elif not pvc.is_retained(cluster) and not controlled:
        live["metadata"]["ownerReferences"] = [
            *(live["metadata"].get("ownerReferences") or ()),
            *ownership.controlled_by(cluster),
        ]
    else:
        return
    await ctx.client.update(PERSISTENT_VOLUME_CLAIM, live)


Step = Callable[[Context, RayCluster], Awaitable[None]]
# Upstream's order, by the names failures are reported with; the pods come after these.
STEPS: tuple[tuple[str, Step], ...] = (
    ("autoscaler-rbac", autoscaler_rbac),
    ("ingress", ingress_or_route),
    ("auth-secret", auth_secret),
    ("head-service", head_service),
    ("headless-service", headless_service),
    ("serve-service", serve_service),
    ("gcs-storage-pvc", gcs_storage_pvc),
)
