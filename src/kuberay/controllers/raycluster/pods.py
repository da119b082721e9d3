"""The pods step of a RayCluster reconcile: upstream's `reconcilePods`, the head pod first, then each worker
group in spec order.

Order within a pass (upstream's `reconcilePods`): suspension (delete everything while Suspending), the Recreate upgrade,
the head pod (create one, delete a dead one, refuse two), then per group: skip while its scale
expectations are unsatisfied, delete a suspended group, multi-host groups as whole replicas
(`multihost`), delete dead pods (`podstate.should_delete_pod`), `workersToDelete`, then create (unless the
group's `scaleGate` holds it: `scalegate`) or (randomly, when allowed) delete the difference. The writes,
their expectations and Events are `podwrites.PodWriter`'s.

Beyond upstream: between the head and the groups, the pods of groups the spec no longer names are drained
(`orphans`): deleted like any worker, after one Warning Event per group.

A group whose scale expectations the cache has not caught up with is skipped, so a stale cache never makes
a pod twice or deletes one twice. The pass stops at the first error (`PodsError`, or `ReplicaFailureError`
for the errors upstream marks for the ReplicaFailure condition); the reconciler writes status and requeues.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature
from kuberay.api.raycluster import (
    RayCluster,
    RayClusterConditionReason,
    RayClusterConditionType,
    WorkerGroupSpec,
)
from kuberay.builders import pod
from kuberay.controllers.raycluster import (
    conditions,
    orphans,
    podstate,
    recreate,
    replicas,
    scalegate,
    status,
)
from kuberay.controllers.raycluster.context import Context
from kuberay.controllers.raycluster.multihost import MultiHostGroup
from kuberay.controllers.raycluster.podwrites import CREATE, PodsError, PodWriter
from kuberay.runtime import errors
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.expectations import ScaleAction
from kuberay.runtime.resources import POD
from kuberay.schedulers.interface import BatchSchedulingError
from kubesemantics.conditions import is_condition_true

Obj = Mapping[str, Any]
HEAD_GROUP = ""  # the head's key in the scale expectations
WORKERS_TO_DELETE = "named in scaleStrategy.workersToDelete"


class PodReconciler:
    """One pass over the pods of one RayCluster (cheap to build; holds the pass's facts)."""

    def __init__(self, ctx: Context, cluster: RayCluster) -> None:
        self.ctx = ctx
        self.cluster = cluster
        self.writer = PodWriter(ctx, cluster)
        self.status: Obj = cluster.status.dump() if cluster.status is not None else {}
        self.namespace = cluster.namespace
        self.name = cluster.name
        self.owner = self.writer.owner
        # A group was skipped because the cache has not caught up with this process's writes: the pass
        # must come again soon, as an expectation that times out sends no event to wake it.
        self.waiting = False

    def _caught_up(self, group: str) -> bool:
        satisfied = self.ctx.expectations.satisfied(self.owner, group)
        self.waiting = self.waiting or not satisfied
        return satisfied

    async def run(self) -> None:
        suspend = conditions.suspend_status(self.status)
        conditions_enabled = self.ctx.options.conditions_enabled
        if suspend == RayClusterConditionType.SUSPENDING or (
            not conditions_enabled and self.cluster.spec.suspend is True
        ):
            await self._delete_for(
                f"Deleted Pods for RayCluster {self.namespace}/{self.name} due to suspension",
                "Failed deleting Pods due to suspension for RayCluster",
            )
            return
        if conditions_enabled and (
            suspend == RayClusterConditionType.SUSPENDED or self.cluster.spec.suspend is True
        ):
            return
        if await self._recreate_for_upgrade():
            return
        try:
            await self.ctx.scheduler.do_batch_scheduling_on_submission(self.writer.parent)
        except BatchSchedulingError as e:
            raise PodsError(str(e)) from e
        if await self._reconcile_head():
            return
        await self._drain_orphans()
        for group in self.cluster.spec.worker_group_specs or ():
            await self._reconcile_group(group)

    async def _drain_orphans(self) -> None:
        """Deletes the pods of worker groups removed from the spec, which no group pass would ever visit.
        Each group is keyed in the scale expectations under its own name, as while it was in the spec, so a
        stale cache never deletes a pod twice."""
        known = [g.group_name for g in self.cluster.spec.worker_group_specs or ()]
        found = self.writer.pods(**{constants.RAY_NODE_TYPE_LABEL: constants.WORKER_NODE})
        for group in orphans.find(known, found):
            if not group.to_delete or not self._caught_up(group.name):
                continue
            self.writer.event(
                WARNING, orphans.EVENT_REASON, orphans.event_message(group, self.namespace, self.name)
            )
            deleted: list[str] = []
            try:
                for name in group.to_delete:
                    if await self.writer.delete_named(name, group.name, "Pod", count_missing=False):
                        deleted.append(name)
            finally:
                if deleted:
                    self.writer.scale_event(group.name, "deleted", deleted, orphans.WHY)

    async def _delete_for(self, note: str, failure: str) -> None:
        """Deletes every pod of the cluster; `note` is the Normal Event's text, `failure` the Warning's
        prefix."""
        try:
            await self.writer.delete_all()
        except errors.KubeError as e:
            self.writer.event(
                WARNING, "FailedToDeletePodCollection", f"{failure} {self.namespace}/{self.name}, {e}"
            )
            raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_ALL_PODS, e) from e
        self.writer.event(NORMAL, "DeletedPod", note)

    async def _recreate_for_upgrade(self) -> bool:
        if not recreate.is_recreate(self.writer.spec):
            return False
        heads = self.writer.pods(**{constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE})
        if not heads:
            return False
        expected = recreate.spec_hash(self.writer.spec)
        verdict = recreate.head_verdict(heads[0], expected)
        if verdict == "restamp":
            patch = {
                "metadata": {
                    "annotations": {
                        constants.UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: expected,
                        constants.KUBERAY_VERSION_ANNOTATION: constants.KUBERAY_VERSION,
                    }
                }
            }
            await self.ctx.client.patch(POD, podstate.pod_name(heads[0]), patch, self.namespace)
            return False
        if verdict != "recreate":
            return False
        self.ctx.expectations.forget(self.owner)
        await self._delete_for(
            f"Deleted all Pods for RayCluster {self.namespace}/{self.name} due to spec change with Recreate upgradeStrategy",
            "Failed deleting Pods due to spec change with Recreate upgradeStrategy for RayCluster",
        )
        return True

    async def _reconcile_head(self) -> bool:
        """Reconciles the head pod; True when the pass must stop here (workers not reconciled)."""
        if not self._caught_up(HEAD_GROUP):
            return False
        heads = self.writer.pods(**{constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE})
        if len(heads) == 1:
            head = heads[0]
            delete, reason = podstate.should_delete_pod(head, constants.HEAD_NODE)
            if not delete:
                return False
            summary = f"{self.namespace}/{podstate.pod_name(head)}; {podstate.pod_summary(head)}"
            try:
                await self.writer.delete(podstate.pod_name(head))
            except errors.KubeError as e:
                self.writer.event(
                    WARNING, "FailedToDeleteHeadPod", f"Failed deleting head Pod {summary}, {e}"
                )
                raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_HEAD_POD, e) from e
            self.ctx.expectations.expect(self.owner, HEAD_GROUP, podstate.pod_name(head), ScaleAction.DELETE)
            self.writer.event(NORMAL, "DeletedHeadPod", f"Deleted head Pod {summary}")
            raise PodsError(reason)
        if len(heads) > 1:
            listed = " ".join(podstate.pod_name(h) for h in heads)
            raise PodsError(f"{len(heads)} head pods found [{listed}]. Please delete extra head pods")
        if (
            is_condition_true(self.status, RayClusterConditionType.PROVISIONED)
            and self.cluster.annotations.get(constants.DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION) == "true"
        ):
            return True
        self.writer.check_mtls()
        built = pod.build_head_pod(
            self.cluster, self.ctx.options.pods, recreate_hash=recreate.spec_hash(self.writer.spec)
        )
        try:
            name = await self.writer.create(built, HEAD_GROUP)
        except errors.KubeError as e:
            wanted = built["metadata"].get("name") or built["metadata"].get("generateName")
            self.writer.event(
                WARNING,
                "FailedToCreateHeadPod",
                f"Failed to create head Pod {self.namespace}/{wanted}, {e}",
                CREATE,
            )
            raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_CREATE_HEAD_POD, e) from e
        self.writer.event(NORMAL, "CreatedHeadPod", f"Created head Pod {self.namespace}/{name}", CREATE)
        return False

    async def _reconcile_group(self, group: WorkerGroupSpec) -> None:
        group_name = group.group_name
        if not self._caught_up(group_name):
            return
        wire = group.dump()
        expected = replicas.group_desired_replicas(wire)
        selector = {constants.RAY_NODE_GROUP_LABEL: group_name}
        found = self.writer.pods(**selector)
        if group.suspend is True:
            try:
                await self.writer.delete_all(**selector)
            except errors.KubeError as e:
                self.writer.event(
                    WARNING,
                    "FailedToDeleteWorkerPodCollection",
                    f"Failed deleting worker Pods for suspended group {group_name} in RayCluster {self.namespace}/{self.name}, {e}",
                )
                raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_WORKER_POD, e) from e
            self.writer.event(
                NORMAL,
                "DeletedWorkerPod",
                f"Deleted all pods for suspended worker group {group_name} in RayCluster {self.namespace}/{self.name}",
            )
            return
        if group.num_of_hosts > 1 and self.ctx.options.gates.enabled(Feature.RAY_MULTI_HOST_INDEXING):
            await MultiHostGroup(self.writer, group).reconcile(
                found, expected, replicas.explain_desired(wire)
            )
            return

        deleted: set[str] = set()
        for p in found:
            delete, _ = podstate.should_delete_pod(p, constants.WORKER_NODE)
            if delete:
                await self.writer.delete_worker(
                    p,
                    group_name,
                    f"Deleted worker Pod {self.namespace}/{podstate.pod_name(p)}; {podstate.pod_summary(p)}",
                )
                deleted.add(podstate.pod_name(p))
        if deleted:
            raise PodsError(f"delete {len(deleted)} unhealthy worker Pods")

        try:
            for name in (group.scale_strategy.workers_to_delete if group.scale_strategy else None) or ():
                if await self.writer.delete_named(name, group_name, "pod", count_missing=False):
                    deleted.add(name)
        finally:
            if deleted:
                self.writer.scale_event(group_name, "deleted", sorted(deleted), WORKERS_TO_DELETE)

        running = [p for p in found if podstate.pod_name(p) not in deleted]
        diff = expected - len(running)
        why = f"{len(running)} running, {expected} wanted ({replicas.explain_desired(wire)})"
        if scalegate.holds_creation(self.cluster, group, diff, why):
            return
        if diff > 0:
            self.writer.check_mtls()
            used = {
                int(label)
                for p in running
                if (
                    label := podstate.pod_labels(p).get(constants.RAY_WORKER_REPLICA_INDEX_LABEL, "")
                ).isdigit()
            }
            builds = []
            for index in replicas.free_indices(used, diff):
                builds.append(
                    pod.build_worker_pod(self.cluster, group, self.ctx.options.pods, replica_index=index)
                )
            await self.writer.create_many(builds, group_name, why)
        elif diff < 0 and self.writer.random_delete_allowed():
            done: list[str] = []
            try:
                for p in running[:-diff]:
                    await self.writer.delete_named(
                        podstate.pod_name(p), group_name, "Pod", count_missing=True
                    )
                    done.append(podstate.pod_name(p))
            finally:
                if done:
                    self.writer.scale_event(group_name, "deleted", done, f"at random, {why}")
