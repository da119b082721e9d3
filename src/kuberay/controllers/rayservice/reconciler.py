"""The RayService reconciler, in upstream's order (`RayServiceReconciler.Reconcile`):

 1. read the RayService from the cache; externally managed (`managedBy` other than KubeRay) → nothing;
 2. forget cached serve configs of clusters that are neither active nor pending;
 3. delete dangling clusters once their deletion delay has passed (and bound a pending cluster's upgrade
    by RAYSERVICE_UPGRADE_TIMEOUT_SECONDS, ours);
 4. deletion (finalizer removed once no cluster is left) and the finalizer itself;
 5. validation (Warning Event, `Ready=False/ValidationFailed`, recoverable);
 6. suspend (`suspend`), and the terminal initializing timeout;
 7. the active and pending RayClusters: create the pending one, update either in place;
 8. the `ray.io/serve` label of each head pod, and Serve applications on the clusters that get them
    (`serving`);
 9. with incremental upgrade: per-cluster serve Services, Gateway, HTTPRoute and target capacity
    (`gateway`, deciding with `incremental`);
10. once a cluster is ready, the RayService's head and serve Services, pointed at it;
11. the status from what the pass saw (`status.calculate`), written when it changed;
12. requeue after 2 s.

This module owns the pass and the clusters' life cycle (steps 3, 4 and 7); each pass is a
`context.Pass`. Reads come from the informer caches; writes go through the client; dashboard calls are
bounded by the client's timeout. Events are events.k8s.io/v1, reported by `rayservice-controller`.
"""

from __future__ import annotations

import contextlib
import random
from datetime import timedelta

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayservice import RayServiceConditionReason as Reason
from kuberay.api.rayservice import RayServiceConditionType as Type
from kuberay.api.validation import event_reason, validate_rayservice
from kuberay.builders import service as service_builder
from kuberay.controllers import writes
from kuberay.controllers.dashboards import DashboardAccess
from kuberay.controllers.podproblems import startup_problem
from kuberay.controllers.rayservice import clusters, gateway, incremental, serving
from kuberay.controllers.rayservice import status as st
from kuberay.controllers.rayservice.context import (
    JSON,
    REQUEUE,
    Caches,
    Context,
    Options,
    Pass,
)
from kuberay.controllers.rayservice.serving import ServeOutcome
from kuberay.controllers.rayservice.suspend import reconcile_suspend
from kuberay.rayresources import RAYCLUSTER, RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.events import WARNING, Recorder
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import ObjectKey
from kubesemantics import times
from kubesemantics.conditions import set_condition
from kubesemantics.names import random_suffix

DEFAULT_DELETION_DELAY = 60
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


class RayServiceReconciler:
    def __init__(
        self,
        client: Client,
        caches: Caches,
        dashboard: DashboardAccess,
        options: Options,
        clock: Clock,
        recorder: Recorder | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.ctx = Context(client, caches, dashboard, options, clock, recorder, rng or random.Random())

    async def reconcile(self, key: ObjectKey) -> Result:
        cached = self.ctx.caches.rayservices.get(key)
        if cached is None:
            return Result()
        return await _run(Pass(self.ctx, key, thaw(cached)))


async def _run(p: Pass) -> Result:
    managed_by = p.model.spec.managed_by
    if managed_by is not None and managed_by != constants.KUBERAY_CONTROLLER:
        return Result()
    p.ctx.serve_configs.keep_only(str(p.key), {p.active_name, p.pending_name} - {""})
    metadata = p.obj["metadata"]
    deleting = bool(metadata.get("deletionTimestamp"))
    remaining = await _cleanup_clusters(p, deleting)
    if deleting:
        if remaining:
            return Result(requeue_after=REQUEUE)
        await _remove_finalizer(p)
        return Result()
    if constants.RAY_SERVICE_FINALIZER not in (metadata.get("finalizers") or []):
        metadata["finalizers"] = [*(metadata.get("finalizers") or []), constants.RAY_SERVICE_FINALIZER]
        await p.ctx.client.update(RAYSERVICE, p.obj)
        return Result(requeue_after=REQUEUE)
    problems = validate_rayservice(p.model, p.ctx.options.gates)
    if problems:
        first = problems[0]
        note = f"{p.key.namespace}/{p.key.name}: {first.message}"
        p.event(WARNING, event_reason("RayService", first), note, "Validate")
        conditions = p.status.setdefault("conditions", [])
        set_condition(conditions, Type.READY, "False", Reason.VALIDATION_FAILED, first.message, p.stamp)
        p.status["lastUpdateTime"] = p.stamp
        await p.write_status()
        return Result()
    suspended = await reconcile_suspend(p)
    if suspended is not None:
        return suspended
    if st.has_reason(p.status, Type.READY, Reason.INITIALIZING_TIMEOUT):
        return Result(requeue_after=REQUEUE) if remaining else Result()
    return await _serve_pass(p)


async def _serve_pass(p: Pass) -> Result:
    try:
        active, pending = await _reconcile_clusters(p)
    except errors.NotFoundError:
        return Result(requeue_after=REQUEUE)
    if p.incremental and st.is_true(p.status, Type.UPGRADE_IN_PROGRESS):
        if active is None:
            p.event(WARNING, "RollbackImpossible", "Active cluster not found, rollback cannot be initiated",
                    "Reconcile")  # fmt: skip
        elif pending is not None:
            incremental.decide_rollback(p.status, active, pending, p.goal, p.stamp)
    for cluster in (active, pending):
        if cluster is not None:
            await serving.label_head_pod(p, cluster)

    prepare_new = _new_cluster_due(p, active, pending)
    rolling_back = st.is_true(p.status, Type.ROLLBACK_IN_PROGRESS)
    upgrading = st.is_true(p.status, Type.UPGRADE_IN_PROGRESS)
    pending_outcome: ServeOutcome | None = None
    active_outcome: ServeOutcome | None = None
    if pending is not None:
        submit = not (p.incremental and rolling_back)
        pending_outcome = await serving.serve(p, pending, "pendingServiceStatus", submit=submit)
    if active is not None and ((pending is None and not prepare_new) or (p.incremental and pending)):
        submit = not (p.incremental and upgrading and pending is not None and not rolling_back)
        active_outcome = await serving.serve(p, active, "activeServiceStatus", submit=submit)

    pending_ready = pending_outcome is not None and pending_outcome.ready
    if p.incremental:
        for cluster in (active, pending):
            if cluster is not None and cluster["metadata"].get("uid"):
                await gateway.reconcile_per_cluster_serve_service(p, cluster)
        await gateway.reconcile_gateway(p, active, pending, pending_ready)
        if upgrading and (active_outcome is not None or pending_outcome is not None):
            await gateway.reconcile_target_capacity(p, active, pending)

    active_ready = active_outcome is not None and active_outcome.ready
    selected = ""
    if pending_ready or active_ready:
        target = active
        if pending_ready and not (p.incremental and upgrading):
            target = pending
        if target is not None:
            selected = target["metadata"]["name"]
            await _reconcile_services(p, target)

    facts = st.Facts(
        service=p.model,
        now=p.now,
        incremental=p.incremental,
        new_name=lambda: f"{p.key.name}-{random_suffix(p.ctx.rng)}",
        active=st.Seen(active, active_outcome, _why_not_ready(p, active, active_outcome)),
        pending=st.Seen(pending, pending_outcome, _why_not_ready(p, pending, pending_outcome)),
        selected=selected,
        route_weights=p.route_weights,
        cached={name: c for name in (p.active_name, p.pending_name) if (c := p.cluster(name)) is not None},
        endpoints=_endpoints(p),
        new_on_change=_new_on_change(p),
        abandoned_hash=p.ctx.abandoned.get(str(p.key)),
    )
    for type, reason, message in st.calculate(p.status, facts):
        p.event(type, reason, message, "Reconcile")
    if st.changed(p.old, p.status):
        p.status["lastUpdateTime"] = p.stamp
        await p.write_status()
    return Result(requeue_after=REQUEUE)


# --- the clusters' life cycle ----------------------------------------------------------------------------


async def _reconcile_clusters(p: Pass) -> tuple[JSON | None, JSON | None]:
    """The pending cluster created when named but missing; either updated in place when its spec (or the
    operator's version, for the active one outside an upgrade) calls for it."""
    active = p.cluster(p.active_name)
    pending = p.cluster(p.pending_name)
    if p.pending_name and pending is None:
        body = clusters.build_cluster(
            p.model, p.pending_name, p.ctx.options.gates, active_exists=active is not None
        )
        await _create_cluster(p, body)
        return active, body
    if (
        active is not None
        and not st.is_true(p.status, Type.UPGRADE_IN_PROGRESS)
        and (clusters.stale_operator_version(active) or clusters.should_update_in_place(active, p.goal))
    ):
        active = await _update_cluster(p, active, "active")
    if pending is not None and clusters.should_update_in_place(pending, p.goal):
        pending = await _update_cluster(p, pending, "pending")
    return active, pending


async def _create_cluster(p: Pass, body: JSON) -> None:
    ns, name = p.key.namespace, body["metadata"]["name"]
    await writes.recorded(
        lambda: p.ctx.client.create(RAYCLUSTER, body),
        p.event,
        "Create",
        ("CreatedRayCluster", f"Created the RayCluster {ns}/{name}"),
        ("FailedToCreateRayCluster", f"Failed to create the RayCluster {ns}/{name}: {{error}}"),
        already=errors.AlreadyExistsError,
    )


async def _update_cluster(p: Pass, cluster: JSON, which: str) -> JSON:
    ns, name = p.key.namespace, cluster["metadata"]["name"]
    updated = clusters.updated_in_place(cluster, p.model, p.ctx.options.gates)
    written: JSON = {}

    async def update() -> None:
        written.update(await p.ctx.client.update(RAYCLUSTER, updated))

    await writes.recorded(
        update,
        p.event,
        "Update",
        ("UpdatedRayCluster", f"Updated the {which} RayCluster {ns}/{name}"),
        ("FailedToUpdateRayCluster", f"Failed to update the {which} RayCluster {ns}/{name}: {{error}}"),
    )
    return written or updated


def _new_on_change(p: Pass) -> bool:
    return clusters.zero_downtime_enabled(p.model, p.ctx.options.gates, p.ctx.options.zero_downtime)


def _new_cluster_due(p: Pass, active: JSON | None, pending: JSON | None) -> bool:
    """Whether this pass's status will name a new pending cluster (then the active one gets no Serve
    submission meanwhile)."""
    if st.is_true(p.status, Type.ROLLBACK_IN_PROGRESS):
        return False
    return clusters.should_prepare_new_cluster(active, pending, p.goal, new_on_change=_new_on_change(p))


async def _cleanup_clusters(p: Pass, deleting: bool) -> bool:
    """Deletes clusters of this RayService that are neither active nor pending once their delay has passed
    (all of them, at once, while it is being deleted); True while any is left. Also abandons a pending
    cluster whose upgrade outlived RAYSERVICE_UPGRADE_TIMEOUT_SECONDS."""
    if not deleting:
        _abandon_stale_upgrade(p)
    keep = set() if deleting else {p.active_name, p.pending_name}
    delay = p.model.spec.ray_cluster_deletion_delay_seconds
    delay = DEFAULT_DELETION_DELAY if delay is None else delay
    remaining = False
    for cluster in p.owned_clusters():
        name = cluster["metadata"]["name"]
        if name in keep:
            continue
        remaining = True
        key = ObjectKey(p.key.namespace, name)
        if not deleting:
            when = p.ctx.delete_at.setdefault(key, p.now + timedelta(seconds=delay))
            if p.now <= when:
                continue
        if cluster["metadata"].get("deletionTimestamp"):
            continue
        await p.delete(RAYCLUSTER, name)
        p.ctx.delete_at.pop(key, None)
    return remaining


def _abandon_stale_upgrade(p: Pass) -> None:
    """Ours: an upgrade (both clusters named) older than the timeout drops its pending cluster, which is
    then dangling and deleted after the deletion delay; the active cluster keeps serving."""
    timeout = p.ctx.options.upgrade_timeout
    if timeout is None or not (p.active_name and p.pending_name):
        return
    upgrade = st.condition(p.status, Type.UPGRADE_IN_PROGRESS)
    if upgrade is None or upgrade.get("status") != "True" or not upgrade.get("lastTransitionTime"):
        return
    started = times.parse_time(str(upgrade["lastTransitionTime"]))
    elapsed = (p.now - started).total_seconds()
    if elapsed < timeout:
        return
    why = upgrade.get("message") or ""
    message = (
        f"Upgrade abandoned after {int(elapsed)}s (RAYSERVICE_UPGRADE_TIMEOUT_SECONDS={int(timeout)}): pending "
        f"RayCluster {p.key.namespace}/{p.pending_name} did not become ready; the active RayCluster keeps serving"
    )
    if why.startswith(st.BOTH_MESSAGE + ": "):
        message += f" ({why[len(st.BOTH_MESSAGE) + 2 :]})"
    p.event(WARNING, "UpgradeTimeout", message, "Reconcile")
    p.status["pendingServiceStatus"] = {}
    conditions = p.status.setdefault("conditions", [])
    set_condition(conditions, Type.UPGRADE_IN_PROGRESS, "False", Reason.NO_PENDING_CLUSTER, message, p.stamp)
    p.ctx.abandoned[str(p.key)] = clusters.cluster_hash(p.goal)


async def _remove_finalizer(p: Pass) -> None:
    finalizers = p.obj["metadata"].get("finalizers") or []
    if constants.RAY_SERVICE_FINALIZER not in finalizers:
        return
    p.obj["metadata"]["finalizers"] = [f for f in finalizers if f != constants.RAY_SERVICE_FINALIZER]
    with contextlib.suppress(errors.NotFoundError):
        await p.ctx.client.update(RAYSERVICE, p.obj)


# --- what the pass tells the status ----------------------------------------------------------------------


async def _reconcile_services(p: Pass, target: JSON) -> None:
    """The RayService's head Service (and, without incremental upgrade, its serve Service) pointed at
    `target`; with incremental upgrade the per-cluster serve Services are the Gateway's backends."""
    model = RayCluster.parse(target)
    desired = [
        service_builder.build_head_service_for_owner(
            p.model, model, cluster_ip_service=p.ctx.options.cluster_ip_head_service
        )
    ]
    if not p.incremental:
        try:
            desired.append(
                service_builder.build_rayservice_serve_service(p.model, model, p.ctx.options.gates)
            )
        except service_builder.ServiceBuildError as e:
            raise TemporaryError(str(e)) from e
    for service in desired:
        await writes.reconcile_service(p.ctx.client, p.ctx.caches.services, service, p.event)


def _why_not_ready(p: Pass, cluster: JSON | None, outcome: ServeOutcome | None) -> str:
    """Why a cluster is not serving yet, when something lasting stands in the way: a pod that cannot start,
    or Serve's own message for an application that failed."""
    if cluster is None:
        return ""
    name = cluster["metadata"]["name"]
    if outcome is not None and not outcome.ready:
        failure = outcome.failure()
        if failure:
            return f"RayCluster {name}: {failure}"
    problem = startup_problem(p.ctx.caches.pods.list(p.key.namespace, {constants.RAY_CLUSTER_LABEL: name}))
    if problem is not None:
        return f"RayCluster {name}: {problem.describe()}"
    return ""


def _endpoints(p: Pass) -> dict[str, int]:
    """Ready serve endpoints by serve Service: the RayService's, and each named cluster's own."""
    names = [p.serve_service_name]
    names += [n + constants.SERVE_SERVICE_SUFFIX for n in (p.active_name, p.pending_name) if n]
    slices = p.ctx.caches.slices
    return {
        name: st.serve_endpoints(slices.list(p.key.namespace, {SERVICE_NAME_LABEL: name})) for name in names
    }
