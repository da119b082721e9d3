"""The RayService reconciler, in upstream's order (`rayservice_controller.go`; spec §3.2):

 1. read the RayService from the cache; externally managed (`managedBy` other than KubeRay) → nothing;
 2. forget cached serve configs of clusters that are neither active nor pending;
 3. delete dangling clusters once their deletion delay has passed (and bound a pending cluster's upgrade
    by RAYSERVICE_UPGRADE_TIMEOUT_SECONDS, ours);
 4. deletion (finalizer removed once no cluster is left) and the finalizer itself;
 5. validation (Warning Event, `Ready=False/ValidationFailed`, recoverable);
 6. suspend, and the terminal initializing timeout;
 7. the active and pending RayClusters: create the pending one, update either in place;
 8. the `ray.io/serve` label of each head pod (from its Serve proxy's health);
 9. Serve applications on the clusters that get them;
10. with incremental upgrade: per-cluster serve Services, Gateway, HTTPRoute and target capacity;
11. once a cluster is ready, the RayService's head and serve Services, pointed at it;
12. the status (promotion, a new pending cluster, endpoints, conditions), written when it changed;
13. requeue after 2 s.

Reads come from the informer caches; writes go through the client; dashboard calls are bounded by the
client's timeout. Events are events.k8s.io/v1, reported by `rayservice-controller`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayservice import ClusterUpgradeOptions, RayService
from kuberay.api.rayservice import RayServiceConditionReason as Reason
from kuberay.api.rayservice import RayServiceConditionType as Type
from kuberay.api.validation import event_reason, validate_rayservice
from kuberay.builders import gateway, ownership
from kuberay.builders import service as service_builder
from kuberay.controllers import writes
from kuberay.controllers.dashboards import DashboardAccess, auth_token, dashboard_address, head_service_name
from kuberay.controllers.podproblems import startup_problem
from kuberay.controllers.rayservice import clusters, incremental
from kuberay.controllers.rayservice import status as st
from kuberay.controllers.rayservice.serving import (
    ServeConfigCache,
    ServeOutcome,
    ServeUpdateError,
    config_body,
    reconcile_serve,
)
from kuberay.rayclient.dashboard import DashboardClient, DashboardError
from kuberay.rayclient.serveproxy import check_proxy_health, direct_health_url, proxied_health_url
from kuberay.rayresources import RAYCLUSTER, RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.events import NORMAL, WARNING, Recorder
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import POD, SERVICE, ObjectKey, Resource
from kubesemantics.conditions import remove_condition, set_condition
from kubesemantics.goparse import GoParseError, atoi, format_seconds, parse_duration
from kubesemantics.names import random_suffix

log = logging.getLogger(__name__)

ENDPOINT_SLICE = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices")
# Read and written directly, never cached: the Gateway API CRDs need not be installed unless a RayService
# uses incremental upgrade (upstream does not watch them either).
GATEWAY = Resource(gateway.GATEWAY_API_VERSION, "Gateway", "gateways")
HTTP_ROUTE = Resource(gateway.GATEWAY_API_VERSION, "HTTPRoute", "httproutes")
REQUEUE = 2.0
DEFAULT_DELETION_DELAY = 60
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
JSON = dict[str, Any]


@dataclass(frozen=True)
class Caches:
    rayservices: Store
    clusters: Store
    pods: Store
    services: Store
    slices: Store
    gateways: Store | None = None
    routes: Store | None = None


@dataclass(frozen=True)
class Options:
    gates: FeatureGates = field(default_factory=FeatureGates)
    cluster_domain: str = constants.DEFAULT_CLUSTER_DOMAIN
    zero_downtime: bool = True  # ENABLE_ZERO_DOWNTIME
    cluster_ip_head_service: bool = False
    upgrade_timeout: float | None = None  # RAYSERVICE_UPGRADE_TIMEOUT_SECONDS; None: no limit


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
        self.client = client
        self.caches = caches
        self.dashboard = dashboard
        self.options = options
        self.clock = clock
        self.recorder = recorder
        self.rng = rng or random.Random()
        self.serve_configs = ServeConfigCache()
        # Dangling clusters' deletion times, by cluster (in memory: a restart restarts the delays).
        self.delete_at: dict[ObjectKey, datetime] = {}
        # The goal hash of each RayService's last upgrade abandoned for RAYSERVICE_UPGRADE_TIMEOUT_SECONDS:
        # that spec is not tried again until it changes.
        self.abandoned: dict[str, str] = {}

    async def reconcile(self, key: ObjectKey) -> Result:
        cached = self.caches.rayservices.get(key)
        if cached is None:
            return Result()
        return await _Pass(self, key, thaw(cached)).run()

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str) -> None:
        if self.recorder is not None:
            self.recorder.record(obj, type, reason, message, action)


class _Pass:
    """One reconcile of one RayService."""

    def __init__(self, owner: RayServiceReconciler, key: ObjectKey, obj: JSON) -> None:
        self.r = owner
        self.key = key
        self.obj = obj
        self.model = RayService.parse(obj)
        self.old: JSON = obj.get("status") or {}
        self.status: JSON = copy.deepcopy(self.old)
        self.now = owner.clock.now()
        self.stamp = self.now.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.incremental = service_builder.is_incremental_upgrade(self.model, owner.options.gates)
        self.goal = clusters.goal_spec(self.model)
        # Incremental upgrade: the HTTPRoute's backend weights and the Gateway API objects of this pass.
        self.route_weights: dict[str, int] | None = None
        self.gateway: JSON | None = None
        self.route: JSON | None = None

    # --- names -------------------------------------------------------------------------------------------

    def _name(self, side: str) -> str:
        return str((self.status.get(side) or {}).get("rayClusterName") or "")

    @property
    def active_name(self) -> str:
        return self._name("activeServiceStatus")

    @property
    def pending_name(self) -> str:
        return self._name("pendingServiceStatus")

    def _cluster(self, name: str) -> JSON | None:
        if not name:
            return None
        cached = self.r.caches.clusters.get(ObjectKey(self.key.namespace, name))
        return thaw(cached) if cached is not None else None

    def _event(self, type: str, reason: str, message: str, action: str) -> None:
        self.r.event(self.obj, type, reason, message, action)

    # --- the pass ----------------------------------------------------------------------------------------

    async def run(self) -> Result:
        managed_by = self.model.spec.managed_by
        if managed_by is not None and managed_by != constants.KUBERAY_CONTROLLER:
            return Result()
        service_key = str(self.key)
        self.r.serve_configs.keep_only(service_key, {self.active_name, self.pending_name} - {""})
        deleting = bool(self.obj["metadata"].get("deletionTimestamp"))
        remaining = await self._cleanup_clusters(deleting)
        if deleting:
            if remaining:
                return Result(requeue_after=REQUEUE)
            await self._remove_finalizer()
            return Result()
        if constants.RAY_SERVICE_FINALIZER not in (self.obj["metadata"].get("finalizers") or []):
            self.obj["metadata"]["finalizers"] = [
                *(self.obj["metadata"].get("finalizers") or []),
                constants.RAY_SERVICE_FINALIZER,
            ]
            await self.r.client.update(RAYSERVICE, self.obj)
            return Result(requeue_after=REQUEUE)
        problems = validate_rayservice(self.model, self.r.options.gates)
        if problems:
            first = problems[0]
            note = f"{self.key.namespace}/{self.key.name}: {first.message}"
            self._event(WARNING, event_reason("RayService", first), note, "Validate")
            conditions = self.status.setdefault("conditions", [])
            set_condition(
                conditions, Type.READY, "False", Reason.VALIDATION_FAILED, first.message, self.stamp
            )
            self.status["lastUpdateTime"] = self.stamp
            await self._write_status()
            return Result()
        suspended = await self._suspend()
        if suspended is not None:
            return suspended
        if st.has_reason(self.status, Type.READY, Reason.INITIALIZING_TIMEOUT):
            return Result(requeue_after=REQUEUE) if remaining else Result()
        return await self._serve_pass(service_key)

    async def _serve_pass(self, service_key: str) -> Result:
        try:
            active, pending = await self._reconcile_clusters()
        except errors.NotFound:
            return Result(requeue_after=REQUEUE)
        if self.incremental and st.is_true(self.status, Type.UPGRADE_IN_PROGRESS):
            if active is None:
                self._event(WARNING, "RollbackImpossible", "Active cluster not found, rollback cannot be initiated",
                            "Reconcile")  # fmt: skip
            elif pending is not None:
                incremental.decide_rollback(self.status, active, pending, self.goal, self.stamp)
        for cluster in (active, pending):
            if cluster is not None:
                await self._label_head_pod(cluster)

        prepare_new = self._should_prepare_new_cluster(active, pending, pending_serving=False)
        rolling_back = st.is_true(self.status, Type.ROLLBACK_IN_PROGRESS)
        upgrading = st.is_true(self.status, Type.UPGRADE_IN_PROGRESS)
        pending_outcome: ServeOutcome | None = None
        active_outcome: ServeOutcome | None = None
        if pending is not None:
            pending_outcome = await self._serve(
                service_key, pending, "pendingServiceStatus", submit=not (self.incremental and rolling_back)
            )
        if active is not None and ((pending is None and not prepare_new) or (self.incremental and pending)):
            submit = not (self.incremental and upgrading and pending is not None and not rolling_back)
            active_outcome = await self._serve(service_key, active, "activeServiceStatus", submit=submit)

        if self.incremental:
            for cluster in (active, pending):
                if cluster is not None and cluster["metadata"].get("uid"):
                    await self._per_cluster_serve_service(cluster)
            await self._reconcile_gateway(
                active, pending, pending_outcome is not None and pending_outcome.ready
            )
            if upgrading and (active_outcome is not None or pending_outcome is not None):
                await self._target_capacity(active, pending)

        pending_ready = pending_outcome is not None and pending_outcome.ready
        active_ready = active_outcome is not None and active_outcome.ready
        selected = ""
        if pending_ready or active_ready:
            target = active
            if pending_ready and not (self.incremental and upgrading):
                target = pending
            if target is not None:
                selected = target["metadata"]["name"]
                await self._reconcile_services(target)

        self._calculate_status(active, pending, pending_outcome, active_outcome, selected)
        if st.changed(self.old, self.status):
            self.status["lastUpdateTime"] = self.stamp
            await self._write_status()
        return Result(requeue_after=REQUEUE)

    # --- clusters ----------------------------------------------------------------------------------------

    async def _reconcile_clusters(self) -> tuple[JSON | None, JSON | None]:
        active = self._cluster(self.active_name)
        pending = self._cluster(self.pending_name)
        gates = self.r.options.gates
        if self.pending_name and pending is None:
            body = clusters.build_cluster(
                self.model, self.pending_name, gates, active_exists=active is not None
            )
            await self._create_cluster(body)
            return active, body
        if (
            active is not None
            and not st.is_true(self.status, Type.UPGRADE_IN_PROGRESS)
            and (
                clusters.stale_operator_version(active) or clusters.should_update_in_place(active, self.goal)
            )
        ):
            active = await self._update_cluster(active, "active")
        if pending is not None and clusters.should_update_in_place(pending, self.goal):
            pending = await self._update_cluster(pending, "pending")
        return active, pending

    async def _create_cluster(self, body: JSON) -> None:
        ns, name = self.key.namespace, body["metadata"]["name"]
        await self._recorded(
            lambda: self.r.client.create(RAYCLUSTER, body),
            "Create",
            ("CreatedRayCluster", f"Created the RayCluster {ns}/{name}"),
            ("FailedToCreateRayCluster", f"Failed to create the RayCluster {ns}/{name}: {{error}}"),
            already=errors.AlreadyExists,
        )

    async def _update_cluster(self, cluster: JSON, which: str) -> JSON:
        ns, name = self.key.namespace, cluster["metadata"]["name"]
        updated = clusters.updated_in_place(cluster, self.model, self.r.options.gates)
        written: JSON = {}

        async def update() -> None:
            written.update(await self.r.client.update(RAYCLUSTER, updated))

        await self._recorded(
            update,
            "Update",
            ("UpdatedRayCluster", f"Updated the {which} RayCluster {ns}/{name}"),
            ("FailedToUpdateRayCluster", f"Failed to update the {which} RayCluster {ns}/{name}: {{error}}"),
        )
        return written or updated

    def _should_prepare_new_cluster(
        self, active: JSON | None, pending: JSON | None, *, pending_serving: bool
    ) -> bool:
        if pending_serving or st.is_true(self.status, Type.ROLLBACK_IN_PROGRESS):
            return False
        if active is None and pending is None:
            return True
        reference = pending if pending is not None else active
        assert reference is not None
        if clusters.full_hash_equal(reference, self.goal) or clusters.partial_hash_equal(
            reference, self.goal
        ):
            return False
        return clusters.zero_downtime_enabled(self.model, self.r.options.gates, self.r.options.zero_downtime)

    async def _cleanup_clusters(self, deleting: bool) -> bool:
        """Deletes clusters of this RayService that are neither active nor pending once their delay has
        passed (all of them, at once, while it is being deleted); True while any is left. Also abandons a
        pending cluster whose upgrade outlived RAYSERVICE_UPGRADE_TIMEOUT_SECONDS."""
        if not deleting:
            self._abandon_stale_upgrade()
        ns = self.key.namespace
        owned = self.r.caches.clusters.list(
            ns,
            {
                constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: self.key.name,
                constants.RAY_ORIGINATED_FROM_CRD_LABEL: constants.RAY_SERVICE_CRD,
            },
        )
        keep = set() if deleting else {self.active_name, self.pending_name}
        delay = self.model.spec.ray_cluster_deletion_delay_seconds
        delay = DEFAULT_DELETION_DELAY if delay is None else delay
        remaining = False
        for cluster in owned:
            name = cluster["metadata"]["name"]
            if name in keep:
                continue
            remaining = True
            key = ObjectKey(ns, name)
            if not deleting:
                when = self.r.delete_at.setdefault(key, self.now + timedelta(seconds=delay))
                if self.now <= when:
                    continue
            if cluster["metadata"].get("deletionTimestamp"):
                continue
            await self._recorded(
                functools.partial(
                    self.r.client.delete, RAYCLUSTER, name, ns, propagation_policy="Background"
                ),
                "Delete",
                ("DeletedRayCluster", f"Deleted the RayCluster {ns}/{name}"),
                ("FailedToDeleteRayCluster", f"Failed to delete the RayCluster {ns}/{name}: {{error}}"),
                already=errors.NotFound,
            )
            self.r.delete_at.pop(key, None)
        return remaining

    def _abandon_stale_upgrade(self) -> None:
        """Ours: an upgrade (both clusters named) older than the timeout drops its pending cluster, which is
        then dangling and deleted after the deletion delay; the active cluster keeps serving."""
        timeout = self.r.options.upgrade_timeout
        if timeout is None or not (self.active_name and self.pending_name):
            return
        upgrade = st.condition(self.status, Type.UPGRADE_IN_PROGRESS)
        if upgrade is None or upgrade.get("status") != "True" or not upgrade.get("lastTransitionTime"):
            return
        started = datetime.fromisoformat(str(upgrade["lastTransitionTime"]).replace("Z", "+00:00"))
        elapsed = (self.now - started).total_seconds()
        if elapsed < timeout:
            return
        pending = self.pending_name
        why = upgrade.get("message") or ""
        message = (
            f"Upgrade abandoned after {int(elapsed)}s (RAYSERVICE_UPGRADE_TIMEOUT_SECONDS={int(timeout)}): pending "
            f"RayCluster {self.key.namespace}/{pending} did not become ready; the active RayCluster keeps serving"
        )
        if why.startswith(st.BOTH_MESSAGE + ": "):
            message += f" ({why[len(st.BOTH_MESSAGE) + 2 :]})"
        self._event(WARNING, "UpgradeTimeout", message, "Reconcile")
        self.status["pendingServiceStatus"] = {}
        set_condition(
            self.status.setdefault("conditions", []),
            Type.UPGRADE_IN_PROGRESS,
            "False",
            Reason.NO_PENDING_CLUSTER,
            message,
            self.stamp,
        )
        self.r.abandoned[str(self.key)] = clusters.cluster_hash(self.goal)

    async def _remove_finalizer(self) -> None:
        finalizers = self.obj["metadata"].get("finalizers") or []
        if constants.RAY_SERVICE_FINALIZER not in finalizers:
            return
        self.obj["metadata"]["finalizers"] = [f for f in finalizers if f != constants.RAY_SERVICE_FINALIZER]
        with contextlib.suppress(errors.NotFound):
            await self.r.client.update(RAYSERVICE, self.obj)

    # --- suspend -----------------------------------------------------------------------------------------

    async def _suspend(self) -> Result | None:
        """The suspend state machine (§3.12): a Result to stop the pass with, or None to go on."""
        conditions: list[JSON] = self.status.setdefault("conditions", [])
        suspending = st.is_true(self.status, Type.SUSPENDING)
        suspended = st.is_true(self.status, Type.SUSPENDED)
        wants = bool(self.model.spec.suspend)
        stamp = self.stamp
        if not suspending and not suspended:
            if not wants:
                return None
            st.stamp_generation(self.status, self.obj["metadata"].get("generation") or 0)
            set_condition(
                conditions,
                Type.SUSPENDING,
                "True",
                Reason.SUSPEND_REQUESTED,
                "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.",
                stamp,
            )
            self._set_all(Reason.SUSPEND_IN_PROGRESS, "RayService is suspending.", "No upgrade in progress.",
                          "No rollback in progress.")  # fmt: skip
            st.reset_for_suspend(self.status)
            await self._write_status()
            return Result(requeue_after=REQUEUE)
        if suspending:
            if await self._delete_owned_for_suspend():
                set_condition(
                    conditions,
                    Type.SUSPENDING,
                    "True",
                    Reason.SUSPEND_IN_PROGRESS,
                    "Waiting for all Kubernetes resources owned by this RayService to be deleted.",
                    stamp,
                )
            else:
                set_condition(conditions, Type.SUSPENDING, "False", Reason.SUSPEND_COMPLETE,
                              "All owned resources have been deleted.", stamp)  # fmt: skip
                set_condition(conditions, Type.SUSPENDED, "True", Reason.SUSPEND_COMPLETE,
                              "All owned resources have been deleted.", stamp)  # fmt: skip
                self._set_all(Reason.SUSPEND_COMPLETE, "RayService is suspended.", "No upgrade in progress.",
                              "No rollback in progress.")  # fmt: skip
            if st.changed(self.old, self.status):
                await self._write_status()
            return Result(requeue_after=REQUEUE)
        if wants:
            return Result()
        st.stamp_generation(self.status, self.obj["metadata"].get("generation") or 0)
        set_condition(conditions, Type.SUSPENDED, "False", Reason.RAY_SERVICE_RESUMED,
                      "Spec.Suspend is false; RayService has resumed.", stamp)  # fmt: skip
        message = "RayService is initializing after resuming from suspend."
        for kind in (Type.READY, Type.UPGRADE_IN_PROGRESS):
            remove_condition(conditions, kind)
            set_condition(conditions, kind, "False", Reason.INITIALIZING, message, stamp)
        return None

    def _set_all(self, reason: str, ready: str, upgrade: str, rollback: str) -> None:
        conditions: list[JSON] = self.status.setdefault("conditions", [])
        set_condition(conditions, Type.READY, "False", reason, ready, self.stamp)
        set_condition(conditions, Type.UPGRADE_IN_PROGRESS, "False", reason, upgrade, self.stamp)
        set_condition(conditions, Type.ROLLBACK_IN_PROGRESS, "False", reason, rollback, self.stamp)

    async def _delete_owned_for_suspend(self) -> bool:
        """Deletes every cluster and Service (and Gateway API object) of this RayService; True while any
        still exists."""
        ns, name = self.key
        left = False
        for cluster in self.r.caches.clusters.list(
            ns,
            {
                constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: name,
                constants.RAY_ORIGINATED_FROM_CRD_LABEL: constants.RAY_SERVICE_CRD,
            },
        ):
            left = True
            cluster_name = cluster["metadata"]["name"]
            if not cluster["metadata"].get("deletionTimestamp"):
                await self._recorded(
                    functools.partial(
                        self.r.client.delete, RAYCLUSTER, cluster_name, ns, propagation_policy="Background"
                    ),
                    "Delete",
                    ("DeletedRayCluster", f"Deleted the RayCluster {ns}/{cluster_name} during suspend"),
                    (
                        "FailedToDeleteRayCluster",
                        f"Failed to delete the RayCluster {ns}/{cluster_name}: {{error}}",
                    ),
                    already=errors.NotFound,
                )
        for svc_name in (self._head_service_name(), self._serve_service_name()):
            existing = self.r.caches.services.get(ObjectKey(ns, svc_name))
            if existing is None:
                continue
            left = True
            if not existing["metadata"].get("deletionTimestamp"):
                await self._recorded(
                    functools.partial(
                        self.r.client.delete, SERVICE, svc_name, ns, propagation_policy="Background"
                    ),
                    "Delete",
                    ("DeletedService", f"Deleted the Service {ns}/{svc_name} during suspend"),
                    ("FailedToDeleteService", f"Failed to delete the Service {ns}/{svc_name}: {{error}}"),
                    already=errors.NotFound,
                )
        if self.incremental:
            for resource, obj_name in (
                (HTTP_ROUTE, gateway.route_name(name)),
                (GATEWAY, gateway.gateway_name(name)),
            ):
                if await self._get_or_none(resource, obj_name) is None:
                    continue
                left = True
                await self._recorded(
                    functools.partial(
                        self.r.client.delete, resource, obj_name, ns, propagation_policy="Background"
                    ),
                    "Delete",
                    (
                        f"Deleted{resource.kind}",
                        f"Deleted the {resource.kind} {ns}/{obj_name} during suspend",
                    ),
                    (
                        f"FailedToDelete{resource.kind}",
                        f"Failed to delete the {resource.kind} {ns}/{obj_name}: {{error}}",
                    ),
                    already=errors.NotFound,
                )
        return left

    # --- head pod label ----------------------------------------------------------------------------------

    async def _label_head_pod(self, cluster: JSON) -> None:
        ns, cluster_name = self.key.namespace, cluster["metadata"]["name"]
        heads = self.r.caches.pods.list(
            ns,
            {constants.RAY_CLUSTER_LABEL: cluster_name, constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE},
        )
        if len(heads) != 1:
            raise TemporaryError(f"found {len(heads)} head. cluster name {cluster_name}, namespace {ns}")
        pod = heads[0]
        value = constants.ENABLE_SERVING_SERVICE_FALSE
        if not self.model.spec.exclude_head_pod_from_serve_svc and await self._proxy_healthy(pod, cluster):
            value = constants.ENABLE_SERVING_SERVICE_TRUE
        labels = pod["metadata"].get("labels") or {}
        if labels.get(constants.RAY_CLUSTER_SERVING_SERVICE_LABEL) == value:
            return
        pod_name = pod["metadata"]["name"]
        patch = {"metadata": {"labels": {constants.RAY_CLUSTER_SERVING_SERVICE_LABEL: value}}}
        await self._recorded(
            lambda: self.r.client.patch(POD, pod_name, patch, ns),
            "Update",
            (
                "UpdatedHeadPodServeLabel",
                f'Updated the serve label to "{value}" for the Head Pod {ns}/{pod_name}',
            ),
            (
                "FailedToUpdateHeadPodServeLabel",
                f'Failed to update the serve label to "{value}" for the Head Pod {ns}/{pod_name}: {{error}}',
            ),
        )

    async def _proxy_healthy(self, pod: Mapping[str, Any], cluster: JSON) -> bool:
        port = _serve_port(cluster)
        api_server = self.r.dashboard.api_server
        if api_server is not None:
            url = proxied_health_url(api_server, self.key.namespace, pod["metadata"]["name"], port)
        else:
            pod_ip = (pod.get("status") or {}).get("podIP")
            if not pod_ip:
                return False
            url = direct_health_url(pod_ip, port)
        try:
            await check_proxy_health(self.r.dashboard.http, url)
        except DashboardError as e:
            log.debug("serve proxy of %s is not healthy: %s", pod["metadata"]["name"], e)
            return False
        return True

    # --- serve -------------------------------------------------------------------------------------------

    def _head_ready(self, cluster: JSON) -> bool:
        if self.r.options.gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS):
            return st.is_true(cluster.get("status") or {}, "HeadPodReady")
        heads = self.r.caches.pods.list(
            self.key.namespace,
            {
                constants.RAY_CLUSTER_LABEL: cluster["metadata"]["name"],
                constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
            },
        )
        return any(
            (pod.get("status") or {}).get("phase") == "Running"
            and st.is_true(pod.get("status") or {}, "Ready")
            for pod in heads
        )

    async def _serve(self, service_key: str, cluster: JSON, side: str, *, submit: bool) -> ServeOutcome:
        if not self._head_ready(cluster):
            return ServeOutcome(ready=False)
        client = await self._dashboard_client(cluster)
        name = cluster["metadata"]["name"]
        target_capacity = (self.status.get(side) or {}).get("targetCapacity") if self.incremental else None
        try:
            outcome = await reconcile_serve(
                client,
                self.r.serve_configs,
                service_key,
                name,
                self.model.spec.serve_config_v2 or "",
                submit=submit,
                target_capacity=target_capacity,
            )
        except DashboardError as e:
            if isinstance(e, ServeUpdateError):
                ns = self.key.namespace
                self._event(WARNING, "FailedToUpdateServeApplications",
                            f"Failed to update serve applications to the RayCluster {ns}/{name}: {e}", "Update")  # fmt: skip
            raise TemporaryError(str(e)) from e
        if outcome.submitted:
            self._event(NORMAL, "UpdatedServeApplications",
                        f"Updated serve applications to the RayCluster {self.key.namespace}/{name}", "Update")  # fmt: skip
        return outcome

    async def _dashboard_client(self, cluster: JSON) -> DashboardClient:
        ns = self.key.namespace
        head_svc = self.r.caches.services.get(ObjectKey(ns, head_service_name(cluster)))
        address = dashboard_address(head_svc, self.r.options.cluster_domain)
        if address is None:
            raise TemporaryError(
                f"the head Service of RayCluster {ns}/{cluster['metadata']['name']} has no dashboard port yet"
            )
        try:
            token = await auth_token(self.r.client, cluster)
        except DashboardError as e:
            raise TemporaryError(str(e)) from e
        return DashboardClient(
            self.r.dashboard.http, self.r.dashboard.base_url(ns, address, cluster), token=token
        )

    # --- services ----------------------------------------------------------------------------------------

    def _head_service_name(self) -> str:
        return self.key.name + constants.HEAD_SERVICE_SUFFIX

    def _serve_service_name(self) -> str:
        custom = ((self.model.spec.serve_service or {}).get("metadata") or {}).get("name")
        return str(custom or self.key.name + constants.SERVE_SERVICE_SUFFIX)

    async def _reconcile_services(self, target: JSON) -> None:
        model = RayCluster.parse(target)
        head = service_builder.build_head_service_for_owner(
            self.model, model, cluster_ip_service=self.r.options.cluster_ip_head_service
        )
        await self.reconcile_service(head)
        if self.incremental:
            return  # per-cluster serve Services are the Gateway's backends (_per_cluster_serve_service)
        try:
            serve = service_builder.build_rayservice_serve_service(self.model, model, self.r.options.gates)
        except service_builder.ServiceBuildError as e:
            raise TemporaryError(str(e)) from e
        await self.reconcile_service(serve)

    async def reconcile_service(self, desired: JSON, *, update: bool = True) -> None:
        await writes.reconcile_service(
            self.r.client, self.r.caches.services, desired, self._event, update=update
        )

    async def _per_cluster_serve_service(self, cluster: JSON) -> None:
        """Incremental upgrade: `<cluster>-serve-svc`, controlled by the cluster, created once, never updated
        (the Gateway's backend for that cluster)."""
        model = RayCluster.parse(cluster)
        try:
            desired = service_builder.build_rayservice_serve_service(self.model, model, self.r.options.gates)
        except service_builder.ServiceBuildError as e:
            raise TemporaryError(str(e)) from e
        desired["metadata"]["ownerReferences"] = ownership.controlled_by(model)
        await self.reconcile_service(desired, update=False)

    # --- incremental upgrade (Gateway API) ------------------------------------------------------------

    def _upgrade_options(self) -> ClusterUpgradeOptions:
        strategy = self.model.spec.upgrade_strategy
        options = strategy.cluster_upgrade_options if strategy is not None else None
        if options is None:
            raise TemporaryError("Missing RayService ClusterUpgradeOptions during upgrade")
        return options

    async def _get_or_none(self, resource: Resource, name: str) -> JSON | None:
        try:
            return await self.r.client.get(resource, name, self.key.namespace)
        except errors.NotFound:
            return None

    async def _reconcile_gateway(
        self, active: JSON | None, pending: JSON | None, pending_ready: bool
    ) -> None:
        """The Gateway, then (once an active cluster exists) the HTTPRoute with this pass's weights."""
        ns = self.key.namespace
        options = self._upgrade_options()
        desired = gateway.build_gateway(self.model, options.gateway_class_name)
        name = desired["metadata"]["name"]
        self.gateway = await self._create_or_update(
            GATEWAY,
            desired,
            gateway.gateway_differs,
            created=f"Created Gateway for RayService {ns}/{name}",
            create_failed=f"Failed to create Gateway for RayService {ns}/{name}: {{error}}",
        )
        if active is None:
            return
        w_active, w_pending = incremental.route_weights(
            self.status,
            options,
            pending_exists=pending is not None,
            pending_ready=pending_ready,
            now=self.now,
        )
        backends = [(active["metadata"]["name"], _serve_port(active), w_active)]
        if pending is not None:
            backends.append((pending["metadata"]["name"], _serve_port(pending), w_pending))
        route = gateway.build_http_route(self.model, backends)
        route_name = route["metadata"]["name"]
        self.route = await self._create_or_update(
            HTTP_ROUTE,
            route,
            gateway.route_differs,
            created=f"Created HTTPRoute for RayService {ns}/{route_name}",
            create_failed=f"Failed to create the HTTPRoute for RayService {ns}/{route_name}: {{error}}",
        )
        self.route_weights = dict(gateway.route_weights(route))

    async def _create_or_update(
        self,
        resource: Resource,
        desired: JSON,
        differs: Callable[[Mapping[str, Any], Mapping[str, Any]], bool],
        *,
        created: str,
        create_failed: str,
    ) -> JSON | None:
        """A Gateway API object read from the API server: created when missing (`created`/`create_failed`,
        the messages of the `Created<Kind>`/`FailedToCreate<Kind>` Events), its spec replaced when `differs`
        says so. The object as read (with the desired spec), or None when it was just created."""
        ns, name, kind = self.key.namespace, desired["metadata"]["name"], resource.kind
        existing = await self._get_or_none(resource, name)
        if existing is None:
            await self._recorded(
                lambda: self.r.client.create(resource, desired),
                "Create",
                (f"Created{kind}", created),
                (f"FailedToCreate{kind}", create_failed),
                already=errors.AlreadyExists,
            )
        elif differs(existing, desired):
            existing["spec"] = desired["spec"]
            await self._recorded(
                lambda: self.r.client.update(resource, existing),
                "Update",
                (f"Updated{kind}", f"Updated the {kind} {ns}/{name}"),
                (f"FailedToUpdate{kind}", f"Failed to update the {kind} {ns}/{name}: {{error}}"),
            )
        return existing

    async def _target_capacity(self, active: JSON | None, pending: JSON | None) -> None:
        """One step of Serve's `target_capacity` during an upgrade (or its rollback)."""
        if not incremental.capacity_update_needed(self.status):
            return
        ns = self.key.namespace
        if self.gateway is None or not gateway.gateway_ready(self.gateway):
            return
        if self.route is None or not gateway.route_ready(self.route, gateway.gateway_name(self.key.name), ns):
            return
        step = incremental.capacity_step(self.status, self._upgrade_options())
        if step is None:
            return
        cluster = active if step.side == incremental.ACTIVE else pending
        if cluster is None or not self._head_ready(cluster):
            return
        name = cluster["metadata"]["name"]
        config = self.r.serve_configs.get(str(self.key), name) or self.model.spec.serve_config_v2 or ""
        try:
            client = await self._dashboard_client(cluster)
            await client.update_serve_applications(config_body(config, step.goal))
        except DashboardError as e:
            self._event(WARNING, "FailedToUpdateTargetCapacity",
                        f"Failed to update target_capacity of serve applications to the RayCluster {ns}/{name}: {e}",
                        "Update")  # fmt: skip
            raise TemporaryError(str(e)) from e
        self.status.setdefault(step.side, {})["targetCapacity"] = step.goal
        self._event(NORMAL, "UpdatedServeTargetCapacity",
                    f"Updated target_capacity of serve applications to to the RayCluster {ns}/{name}", "Update")  # fmt: skip

    # --- status ------------------------------------------------------------------------------------------

    def _calculate_status(
        self,
        active: JSON | None,
        pending: JSON | None,
        pending_outcome: ServeOutcome | None,
        active_outcome: ServeOutcome | None,
        selected: str,
    ) -> None:
        status = self.status
        status["observedGeneration"] = self.obj["metadata"].get("generation") or 0
        for side, cluster, outcome in (
            ("activeServiceStatus", active, active_outcome),
            ("pendingServiceStatus", pending, pending_outcome),
        ):
            entry = status.setdefault(side, {})
            if cluster is not None and cluster.get("status"):
                entry["rayClusterStatus"] = cluster["status"]
            if outcome is not None and outcome.applications:
                entry["applicationStatuses"] = outcome.applications
            else:
                entry.pop("applicationStatuses", None)
        why_pending = self._why_not_ready(pending, pending_outcome)
        why_active = self._why_not_ready(active, active_outcome) if active is not None else ""
        pending_serving = False
        if self.incremental:
            if self.route_weights is not None:
                incremental.record_weights(
                    status, self.route_weights, self.stamp, pending_exists=pending is not None
                )
            # The first cluster is promoted once it serves; later ones once traffic and capacity have moved.
            first = not self.active_name and pending_outcome is not None and pending_outcome.ready
            if first or incremental.should_promote(status, pending is not None):
                st.promote(status)
                pending = None
                why_pending = ""
            pending_head_ready = pending is not None and st.is_true(
                pending.get("status") or {}, "HeadPodReady"
            )
            if incremental.rollback_complete(status, pending_head_ready):
                incremental.finish_rollback(status, self.stamp)
                pending = None
                why_pending = ""
        elif selected:
            pending_serving = selected == self.pending_name and selected != self.active_name
            if selected != self.active_name and selected == self.pending_name:
                st.promote(status)
                pending = None
                why_pending = ""
        if (
            self._should_prepare_new_cluster(
                self._cluster(self.active_name),
                self._cluster(self.pending_name),
                pending_serving=pending_serving,
            )
            and not self._abandoned_goal()
        ):
            entry = {"rayClusterName": f"{self.key.name}-{random_suffix(self.r.rng)}"}
            if self.incremental:
                entry["targetCapacity"] = 0 if self.active_name else 100
            status["pendingServiceStatus"] = entry
        status["numServeEndpoints"] = self._count_endpoints()
        why_not_ready = why_active or why_pending if not self.active_name else why_active
        if why_pending:
            self._event(WARNING, "PendingRayClusterNotReady", why_pending, "Reconcile")
        if why_not_ready and not status["numServeEndpoints"]:
            self._event(WARNING, "RayServiceNotReady", why_not_ready, "Reconcile")
        st.set_conditions(
            status,
            self.stamp,
            why_not_ready=why_not_ready,
            why_pending_not_ready=why_pending,
        )
        self._initializing_timeout()
        st.stamp_generation(status, status["observedGeneration"])

    def _abandoned_goal(self) -> bool:
        return self.r.abandoned.get(str(self.key)) == clusters.cluster_hash(self.goal) and bool(
            self.active_name
        )

    def _why_not_ready(self, cluster: JSON | None, outcome: ServeOutcome | None) -> str:
        """Why a cluster is not serving yet, when something lasting stands in the way: a pod that cannot
        start, or Serve's own message for an application that failed."""
        if cluster is None:
            return ""
        name = cluster["metadata"]["name"]
        if outcome is not None and not outcome.ready:
            failure = outcome.failure()
            if failure:
                return f"RayCluster {name}: {failure}"
        pods = self.r.caches.pods.list(self.key.namespace, {constants.RAY_CLUSTER_LABEL: name})
        problem = startup_problem(pods)
        if problem is not None:
            return f"RayCluster {name}: {problem.describe()}"
        return ""

    def _count_endpoints(self) -> int:
        ns = self.key.namespace
        names = [self._serve_service_name()]
        if self.incremental:
            names = [n + constants.SERVE_SERVICE_SUFFIX for n in (self.active_name, self.pending_name) if n]
        total = 0
        for name in names:
            total += st.serve_endpoints(self.r.caches.slices.list(ns, {SERVICE_NAME_LABEL: name}))
        return total

    def _initializing_timeout(self) -> None:
        """`ray.io/initializing-timeout`: a RayService still initializing past it fails for good."""
        if (self.status.get("numServeEndpoints") or 0) > 0:
            return
        ready = st.condition(self.status, Type.READY)
        if ready is None or ready.get("status") != "False" or ready.get("reason") != Reason.INITIALIZING:
            return
        timeout = _initializing_timeout(
            self.model.annotations.get(constants.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION)
        )
        if timeout is None or not ready.get("lastTransitionTime"):
            return
        since = datetime.fromisoformat(str(ready["lastTransitionTime"]).replace("Z", "+00:00"))
        elapsed = self.now - since
        if elapsed < timeout:
            return
        self.status["activeServiceStatus"] = {}
        self.status["pendingServiceStatus"] = {}
        message = (
            f"RayService failed to become ready within the configured timeout of {_go_duration(timeout)}. "
            f"Time spent initializing: {_go_duration(elapsed)}"
        )
        set_condition(
            self.status["conditions"], Type.READY, "False", Reason.INITIALIZING_TIMEOUT, message, self.stamp
        )
        self._event(
            WARNING,
            "RayServiceInitializingTimeout",
            f"RayService initializing timeout exceeded after {_go_duration(elapsed)} (configured timeout: "
            f"{_go_duration(timeout)})",
            "Reconcile",
        )

    async def _write_status(self) -> None:
        body = {**self.obj, "status": self.status}
        await self.r.client.update_status(RAYSERVICE, body)

    # --- events around writes ----------------------------------------------------------------------------

    async def _recorded(
        self,
        write: Callable[[], Awaitable[object]],
        action: str,
        done: tuple[str, str],
        failed: tuple[str, str],
        *,
        already: type[errors.KubeError] | None = None,
    ) -> None:
        await writes.recorded(write, self._event, action, done, failed, already=already)


def _serve_port(cluster: Mapping[str, Any]) -> int:
    containers = (
        (((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    ).get("containers") or [{}]
    for port in containers[0].get("ports") or ():
        if port.get("name") == constants.SERVING_PORT_NAME:
            return int(port.get("containerPort") or constants.DEFAULT_SERVING_PORT)
    return constants.DEFAULT_SERVING_PORT


def _initializing_timeout(value: str | None) -> timedelta | None:
    if not value:
        return None
    try:
        seconds = parse_duration(value) / 1e9
    except GoParseError:
        try:
            seconds = float(atoi(value))
        except GoParseError:
            return None
    return timedelta(seconds=seconds) if seconds > 0 else None


def _go_duration(delta: timedelta) -> str:
    return format_seconds(int(delta.total_seconds()))
