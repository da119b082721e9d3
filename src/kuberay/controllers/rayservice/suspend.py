"""Suspending and resuming a RayService (upstream `reconcileSuspend`, `isSuspending…`): `spec.suspend`
true deletes every object the RayService owns, then holds it `Suspended`; false again resumes it from
scratch (a new cluster, conditions back to initializing).

The states are the `Suspending` and `Suspended` conditions:
- neither, suspend wanted: `Suspending=True/SuspendRequested`, the other conditions and both cluster entries
  reset, written at once (the deletes start on the next pass);
- `Suspending`: delete what is left (clusters, the head and serve Services, the Gateway and HTTPRoute);
  once nothing is, `Suspending=False`, `Suspended=True` (both `SuspendComplete`);
- `Suspended`, suspend still wanted: nothing to do; no longer wanted: `Suspended=False/RayServiceResumed`
  and `Ready`, `UpgradeInProgress` initializing again, and the pass goes on.
"""

from __future__ import annotations

from kuberay.api.rayservice import RayServiceConditionReason as Reason
from kuberay.api.rayservice import RayServiceConditionType as Type
from kuberay.builders import gateway
from kuberay.controllers.rayservice import status as st
from kuberay.controllers.rayservice.context import GATEWAY, HTTP_ROUTE, REQUEUE, Pass
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.controller import Result
from kuberay.runtime.resources import SERVICE, ObjectKey
from kubesemantics.conditions import remove_condition, set_condition

REQUESTED = "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService."
WAITING = "Waiting for all Kubernetes resources owned by this RayService to be deleted."
COMPLETE = "All owned resources have been deleted."
RESUMED = "Spec.Suspend is false; RayService has resumed."
INITIALIZING_AFTER_RESUME = "RayService is initializing after resuming from suspend."
NO_UPGRADE = "No upgrade in progress."
NO_ROLLBACK = "No rollback in progress."


async def reconcile_suspend(p: Pass) -> Result | None:
    """A Result to stop the pass with, or None to go on."""
    conditions = p.status.setdefault("conditions", [])
    suspending = st.is_true(p.status, Type.SUSPENDING)
    suspended = st.is_true(p.status, Type.SUSPENDED)
    wants = bool(p.model.spec.suspend)
    generation = p.obj["metadata"].get("generation") or 0
    if not suspending and not suspended:
        if not wants:
            return None
        set_condition(conditions, Type.SUSPENDING, "True", Reason.SUSPEND_REQUESTED, REQUESTED, p.stamp)
        _set_all(p, Reason.SUSPEND_IN_PROGRESS, "RayService is suspending.")
        # After the conditions are set, so the new Suspending condition carries the generation too.
        st.stamp_generation(p.status, generation)
        st.reset_for_suspend(p.status)
        await p.write_status()
        return Result(requeue_after=REQUEUE)
    if suspending:
        if await _delete_owned(p):
            set_condition(conditions, Type.SUSPENDING, "True", Reason.SUSPEND_IN_PROGRESS, WAITING, p.stamp)
        else:
            set_condition(conditions, Type.SUSPENDING, "False", Reason.SUSPEND_COMPLETE, COMPLETE, p.stamp)
            set_condition(conditions, Type.SUSPENDED, "True", Reason.SUSPEND_COMPLETE, COMPLETE, p.stamp)
            _set_all(p, Reason.SUSPEND_COMPLETE, "RayService is suspended.")
            # Upstream's conditions carry the status's observedGeneration, the one the suspension began at.
            st.stamp_generation(p.status, p.status.get("observedGeneration") or 0)
        if st.changed(p.old, p.status):
            await p.write_status()
        return Result(requeue_after=REQUEUE)
    if wants:
        return Result()
    st.stamp_generation(p.status, generation)
    set_condition(conditions, Type.SUSPENDED, "False", Reason.RAY_SERVICE_RESUMED, RESUMED, p.stamp)
    for kind in (Type.READY, Type.UPGRADE_IN_PROGRESS):
        remove_condition(conditions, kind)
        set_condition(conditions, kind, "False", Reason.INITIALIZING, INITIALIZING_AFTER_RESUME, p.stamp)
    return None


def _set_all(p: Pass, reason: str, ready: str) -> None:
    conditions = p.status.setdefault("conditions", [])
    set_condition(conditions, Type.READY, "False", reason, ready, p.stamp)
    set_condition(conditions, Type.UPGRADE_IN_PROGRESS, "False", reason, NO_UPGRADE, p.stamp)
    set_condition(conditions, Type.ROLLBACK_IN_PROGRESS, "False", reason, NO_ROLLBACK, p.stamp)


async def _delete_owned(p: Pass) -> bool:
    """Deletes every cluster and Service (and Gateway API object) of this RayService; True while any
    still exists."""
    during = " during suspend"
    left = False
    for cluster in p.owned_clusters():
        left = True
        if not cluster["metadata"].get("deletionTimestamp"):
            await p.delete(RAYCLUSTER, cluster["metadata"]["name"], why=during)
    for name in (p.head_service_name, p.serve_service_name):
        existing = p.ctx.caches.services.get(ObjectKey(p.key.namespace, name))
        if existing is None:
            continue
        left = True
        if not existing["metadata"].get("deletionTimestamp"):
            await p.delete(SERVICE, name, why=during)
    if p.incremental:
        for resource, name in (
            (HTTP_ROUTE, gateway.route_name(p.key.name)),
            (GATEWAY, gateway.gateway_name(p.key.name)),
        ):
            if await p.get_or_none(resource, name) is not None:
                left = True
                await p.delete(resource, name, why=during)
    return left
