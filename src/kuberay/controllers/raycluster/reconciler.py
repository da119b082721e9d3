"""The RayCluster reconcile: upstream's `rayClusterReconcile`, step for step.

1. Read the RayCluster from the cache; gone → forget its scale expectations and metrics series.
2. `spec.managedBy` naming another controller → nothing at all.
3. Validation in upstream's order (metadata, spec, the autoscaler-v1 warning, mTLS without cert-manager,
   upgrade strategy, status); a failure is a Warning Event with upstream's text and no pods.
   Beyond upstream (kuberay#4975): the refused generation is observed too, with `Valid=False` and the
   same text (`validity`); a status that fails validation is not written over.
4. The GCS FT finalizer (may end the pass); a deleting cluster stops here.
5. The owned objects in order (`dependents.STEPS`), then the pods (`pods.PodReconciler`); the first error
   stops the chain but not the status.
6. The status, calculated purely (`status.calculate_status`) and written through the status subresource
   only when a compared field changed.
7. Requeue: 2 s after an error, a status write or a pass that skipped a group its scale expectations held
   back (a create that never shows up is given up on by time, which sends no event), else the periodic
   resync (300 s by default), or sooner for an mTLS cluster: upstream's mTLS requeue (30 s while its
   certificates are not Ready, 60 s once they are). Pods held for certificates (`MTLSHold`) are not an
   error to back off from: the Certificate and Secret watches wake the cluster when cert-manager issues.

Each stage is a named step (`kuberay.runtime.steps`): "validate", "finalizer", one per owned object,
"pods" and "status", so a failure is reported as `reconcile step "pods" failed: ...`. The cached object is
parsed once into the `RayCluster` model, and every step after validation takes that model alone;
validation checks the wire form, with the same rules admission applies.

Beyond upstream: a pod that cannot make progress gets a Warning Event `PodFailure` naming it and its
reason (the status condition of the same name is set by `calculate_status`); with in-tree autoscaling, an
autoscaler sidecar that is not running gets a Warning Event `AutoscalerFailure` (and the condition). Every
status written after validation carries `Valid=True` (`validity`) and, while pods of worker groups removed
from the spec remain, `OrphanedWorkerGroup` (`orphans`; the pods step drains them).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster, RayClusterConditionType
from kuberay.api.validation import autoscaler_v1_restart_policy_warning, wire
from kuberay.api.validation import raycluster as rules
from kuberay.builders import tls
from kuberay.controllers.raycluster import (
    autoscalerhealth,
    dependents,
    finalizer,
    mtls,
    orphans,
    podstate,
    status,
    validity,
)
from kuberay.controllers.raycluster.context import SHORT_REQUEUE_SECONDS, Context
from kuberay.controllers.raycluster.metrics import ClusterMetrics
from kuberay.controllers.raycluster.pods import PodReconciler
from kuberay.controllers.raycluster.podwrites import MTLSHold, PodsError
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.events import WARNING
from kuberay.runtime.informer import NOT_SERVED_PROBE
from kuberay.runtime.resources import ObjectKey
from kuberay.runtime.steps import step
from kubesemantics import times
from kubesemantics.conditions import is_condition_true

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
VALIDATE = "Validate"


def is_managed_elsewhere(spec: Obj) -> bool:
    """`spec.managedBy` set to anything but KubeRay's own name (the empty string included)."""
    managed_by = spec.get("managedBy")
    return managed_by is not None and managed_by != constants.KUBERAY_CONTROLLER


class RayClusterReconciler:
    def __init__(self, ctx: Context, metrics: ClusterMetrics | None = None) -> None:
        self.ctx = ctx
        self.metrics = metrics

    async def reconcile(self, key: ObjectKey) -> Result:
        cached = self.ctx.clusters.get(key)
        if cached is None:
            self.ctx.expectations.forget(key)
            if self.metrics is not None:
                self.metrics.forget(key)
            return Result()
        if is_managed_elsewhere(cached.get("spec") or {}):
            log.info("RayCluster is managed by %s; skipping", cached["spec"].get("managedBy"))
            return Result()
        cluster: dict[str, Any] = copy.deepcopy(dict(cached))
        for group in [
            cluster["spec"].get("headGroupSpec") or {},
            *(cluster["spec"].get("workerGroupSpecs") or []),
        ]:
            if group.get("rayStartParams") is None:
                group["rayStartParams"] = {}
        try:
            model = RayCluster.parse(cluster)
        except ValidationError as e:
            message = f"The RayCluster spec is invalid {key}: {e}"
            self._invalid(cluster, "InvalidRayClusterSpec", message)
            return await self._write_invalid(cluster, message)
        with step("validate"):
            awaits_cert_manager = mtls.enabled(self.ctx, model) and not mtls.cert_manager_installed(self.ctx)
            refusal = self._validate(cluster, model, key)
        if refusal is not None:
            written = await self._write_invalid(cluster, refusal)
            if awaits_cert_manager and not written.requeue:
                # cert-manager installed after the operator is found by its informer's next look.
                return Result(requeue_after=NOT_SERVED_PROBE)
            return written

        with step("finalizer"):
            done = await finalizer.handle_finalizer(self.ctx, model)
        if done is not None:
            return done
        if model.metadata.deletion_timestamp:
            return Result()

        reconcile_error: Exception | None = None
        mtls_requeue: float | None = None
        pods = PodReconciler(self.ctx, model)
        try:
            for name, dependent in dependents.STEPS:
                with step(name):
                    await dependent(self.ctx, model)
            with step("mtls"):
                mtls_requeue = await mtls.reconcile_certificates(self.ctx, model)
            with step("pods"):
                await pods.run()
        except (errors.KubeError, dependents.DependentError, status.ReplicaFailureError, PodsError) as e:
            reconcile_error = e

        with step("status"):
            changed, status_error = await self._write_status(model, reconcile_error)
            # Held pods are not an error to back off from (see the module's docstring, 7).
            held = isinstance(reconcile_error, MTLSHold)
            failed = None if held else reconcile_error
            if failed is None and isinstance(status_error, errors.ConflictError):
                # The cache had not yet seen our previous write; recalculate once it has (no error to report).
                return Result(requeue=True)
            if failed is None and status_error is not None:
                raise TemporaryError(str(status_error)) from status_error
        if failed is not None:
            raise TemporaryError(str(failed)) from failed
        if held:
            log.info("%s, requeuing before pod creation", reconcile_error)
        if changed or pods.waiting:
            return Result(requeue_after=SHORT_REQUEUE_SECONDS)
        periodic = self.ctx.options.env.requeue_seconds
        return Result(requeue_after=periodic if mtls_requeue is None else min(periodic, mtls_requeue))

    def _invalid(self, cluster: Obj, reason: str, message: str) -> None:
        self.ctx.event(cluster, WARNING, reason, message, VALIDATE)

    def _validate(self, cluster: Obj, model: RayCluster, key: ObjectKey) -> str | None:
        """Upstream's validation sequence; a refusal (sent as an Event) ends the pass, with its text."""
        refusal = self._refusal(cluster, model, key)
        if refusal is not None:
            self._invalid(cluster, *refusal)
            return refusal[1]
        for error in rules.status(wire.obj(cluster, "status")):
            self._invalid(
                cluster, "InvalidRayClusterStatus", f"The RayCluster status is invalid {key}, {error.message}"
            )
            raise TemporaryError(error.message)
        return None

    def _refusal(self, cluster: Obj, model: RayCluster, key: ObjectKey) -> tuple[str, str] | None:
        """The first failing check of upstream's sequence, as (Event reason, message)."""
        meta, spec = wire.obj(cluster, "metadata"), wire.obj(cluster, "spec")
        for error in rules.metadata(meta):
            return "InvalidRayClusterMetadata", f"The RayCluster metadata is invalid {key}: {error.message}"
        gates = self.ctx.options.gates
        for error in rules.cluster_spec(spec, wire.strings(meta, "annotations"), gates, "spec"):
            return "InvalidRayClusterSpec", f"The RayCluster spec is invalid {key}: {error.message}"
        if not self.ctx.options.webhooks and any(wire.has(g, "labelMappings") for g in wire.objs(spec, "workerGroupSpecs")):  # fmt: skip
            # Upstream's reconciler check (kuberay#5300): without the webhooks no label would be delivered.
            return (
                "InvalidRayClusterSpec",
                f"The RayCluster spec is invalid {key}: labelMappings requires the operator to run with webhooks "
                "(ENABLE_WEBHOOKS=true)",
            )
        if (warning := autoscaler_v1_restart_policy_warning(model)) is not None:
            self._invalid(cluster, "InvalidRayClusterSpec", f"RayCluster spec warning {key}: {warning}")
        if tls.is_enabled(spec, gates) and not self.ctx.cert_manager:
            return (
                "InvalidRayClusterSpec",
                f"The RayCluster spec is invalid {key}: tlsOptions requires cert-manager, but cert-manager is not installed",
            )
        for error in rules.upgrade_options(spec, wire.strings(meta, "labels")):
            return (
                "InvalidRayClusterSpec",
                f"The RayCluster UpgradeStrategy is invalid {key}: {error.message}",
            )
        return None

    async def _write_invalid(self, cluster: Obj, message: str) -> Result:
        """Writes a refused cluster's status (`validity.invalid_status`); no requeue, as nothing changes
        until the spec does, and a spec change is an event of its own."""
        old = wire.obj(cluster, "status")
        generation = int(wire.obj(cluster, "metadata").get("generation") or 0)
        new = validity.invalid_status(
            old,
            generation,
            message,
            conditions_enabled=self.ctx.options.conditions_enabled,
            stamp=times.format_time(self.ctx.clock.now()),
        )
        if not validity.invalid_status_changed(old, new):
            return Result()
        with step("status"):
            try:
                await self.ctx.client.update_status(RAYCLUSTER, {**cluster, "status": new})
            except errors.ConflictError:
                # The cache had not yet seen a newer write; look again once it has.
                return Result(requeue=True)
            except errors.Invalid as e:
                # A status the server refuses (it failed validation) is not ours to mend: retrying would
                # only refuse again. The Event has said why the cluster is refused.
                log.warning("status of invalid RayCluster not written: %s", e)
                return Result()
            except errors.KubeError as e:
                raise TemporaryError(str(e)) from e
        return Result()

    async def _write_status(
        self, cluster: RayCluster, reconcile_error: Exception | None
    ) -> tuple[bool, Exception | None]:
        """Calculates and (when changed) writes the status; returns (written, error)."""
        namespace, name = cluster.namespace, cluster.name
        pods = self.ctx.pods.list(namespace, {"ray.io/cluster": name})
        services = self.ctx.services.list(namespace, status.head_service_selector(name))
        now = self.ctx.clock.now()
        try:
            new = status.calculate_status(
                cluster,
                pods,
                services,
                reconcile_error=reconcile_error,
                conditions_enabled=self.ctx.options.conditions_enabled,
                now=now,
            )
        except status.StatusError as e:
            return False, e
        if self.ctx.options.conditions_enabled:
            stamp = times.format_time(now)
            validity.mark_valid(new, stamp)
            groups = [g.group_name for g in cluster.spec.worker_group_specs or ()]
            orphans.set_orphan_condition(new, orphans.find(groups, pods), stamp)
        old: Obj = cluster.status.dump() if cluster.status is not None else {}
        for problem in podstate.failing_pods(pods):
            self.ctx.event(
                cluster, WARNING, status.POD_FAILURE_CONDITION, problem.describe(namespace), "Reconcile"
            )
        heads = podstate.head_pods(pods)
        if cluster.spec.enable_in_tree_autoscaling is True and heads:
            stalled = autoscalerhealth.autoscaler_problem(heads[0], namespace)
            if stalled is not None:
                self.ctx.event(cluster, WARNING, autoscalerhealth.CONDITION, stalled.message, "Reconcile")
        if not status.status_changed(old, new):
            return False, None
        try:
            await self.ctx.client.update_status(RAYCLUSTER, {**cluster.dump(), "status": new})
        except errors.KubeError as e:
            return False, e
        provisioned = RayClusterConditionType.PROVISIONED
        if (
            self.metrics is not None
            and is_condition_true(new, provisioned)
            and not is_condition_true(old, provisioned)
        ):
            self.metrics.provisioned(cluster, self.ctx.clock.now())
        return True, None
