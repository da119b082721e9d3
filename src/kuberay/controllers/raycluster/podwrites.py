"""Writing the pods of one RayCluster: creates and deletes with their scale expectations and Events, in
upstream's words, and the two rules that say whether a pass may write at all (mTLS certificates, random
deletion when scaling down).

Every create and delete is recorded in the scale expectations before the pass ends, so a stale cache never
makes a pod twice or deletes one twice; so is a create whose answer was lost, by the name the pod was sent
with. Many pods are created in slow-start batches (1, 2, 4, ...): a failing
create stops after one request, a healthy scale-up of a hundred pods takes a handful of round trips. Errors
that upstream marks for the ReplicaFailure condition are raised as `ReplicaFailureError`, the others as
`PodsError`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster, RayClusterConditionReason
from kuberay.builders import autoscaler, tls
from kuberay.controllers.errors import ReconcileError
from kuberay.controllers.raycluster import mtls, podstate, status
from kuberay.controllers.raycluster.context import Context
from kuberay.runtime import errors
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.expectations import ScaleAction
from kuberay.runtime.resources import POD, ObjectKey
from kubesemantics.names import generated_name

Obj = Mapping[str, Any]
DELETE, CREATE = "Delete", "Create"
# Beyond upstream: the Event reason of a scale decision (see `PodWriter.scale_event`).
SCALED_WORKER_GROUP = "ScaledWorkerGroup"
_RNG = random.Random()


class PodsError(ReconcileError):
    """A pass over the pods stopped early without a ReplicaFailure reason (requeue and retry)."""


class MTLSHold(PodsError):
    """No pod may be made yet: the cluster's certificates or their Secrets are not issued. Not retried with
    backoff: the watches of Certificates and issued Secrets wake the cluster, and the mTLS step's requeue
    looks again (upstream's RayCluster controller backs off; its mTLS controller requeues)."""


class PodWriter:
    """Creates, deletes and lists the pods of one RayCluster for one pass (cheap to build)."""

    def __init__(self, ctx: Context, cluster: RayCluster) -> None:
        self.ctx = ctx
        self.cluster = cluster
        self.spec: Obj = cluster.spec.dump()
        self.namespace = cluster.namespace
        self.name = cluster.name
        self.owner = ObjectKey(self.namespace, self.name)
        # The cluster's wire form, as the batch-scheduler plugin reads its parent.
        self.parent: Obj = cluster.dump()

    def pods(self, **labels: str) -> list[Obj]:
        selector = {constants.RAY_CLUSTER_LABEL: self.name, **labels}
        # By name: the order an API server lists them in, which upstream's random deletion follows.
        return sorted(self.ctx.pods.list(self.namespace, selector), key=podstate.pod_name)

    def event(self, type: str, reason: str, message: str, action: str = DELETE) -> None:
        self.ctx.event(self.cluster, type, reason, message, action)

    async def delete(self, name: str) -> bool:
        """Deletes a pod by name; False when it was already gone."""
        try:
            await self.ctx.client.delete(POD, name, self.namespace)
        except errors.NotFoundError:
            return False
        return True

    async def delete_all(self, **labels: str) -> list[Obj]:
        """Upstream's `deleteAllPods`: deletes the listed pods unless every one is already terminating;
        returns the list as it was before."""
        found = self.pods(**labels)
        if any(not p["metadata"].get("deletionTimestamp") for p in found):
            await asyncio.gather(*(self.delete(podstate.pod_name(p)) for p in found))
        return found

    async def create(self, built: dict[str, Any], group: str) -> str:
        """Creates a pod of `group` ("" for the head), stamped by the batch scheduler just before.

        A pod built with `generateName` is named here, as the API server would name it (the generateName
        stays), so that a create sent without an answer is still expected by its name: the server may have
        made it, and the cache may only learn so after a relist."""
        scheduler_group = group or constants.HEAD_GROUP_NAME
        self.ctx.scheduler.add_metadata_to_child_resource(self.parent, built, scheduler_group)
        metadata = built["metadata"]
        if not metadata.get("name"):
            metadata["name"] = generated_name(metadata["generateName"], _RNG)
        try:
            created = await self.ctx.client.create(POD, built, self.namespace)
        except errors.OutcomeUnknown:
            self.ctx.expectations.expect(self.owner, group, metadata["name"], ScaleAction.CREATE)
            raise
        name = podstate.pod_name(created)
        self.ctx.expectations.expect(self.owner, group, name, ScaleAction.CREATE)
        return name

    async def create_many(self, builds: Sequence[dict[str, Any]], group: str, why: str) -> None:
        """Creates pods in slow-start batches; the first failure stops creation and is raised marked
        `FailedCreateWorkerPod` after its Warning Event. `why` ends the group's `ScaledWorkerGroup` Event,
        sent for the pods made even when a later create failed."""
        batch, start = 1, 0
        made: list[str] = []
        try:
            while start < len(builds):
                chunk = builds[start : start + batch]
                results = await asyncio.gather(
                    *(self.create(b, group) for b in chunk), return_exceptions=True
                )
                failure: errors.KubeError | None = None
                for result in results:
                    if isinstance(result, errors.KubeError):
                        failure = failure or result
                    elif isinstance(result, BaseException):
                        raise result
                    else:
                        made.append(result)
                        self.event(
                            NORMAL,
                            "CreatedWorkerPod",
                            f"Created worker Pod {self.namespace}/{result}",
                            CREATE,
                        )
                if failure is not None:
                    self.event(
                        WARNING,
                        "FailedToCreateWorkerPod",
                        f"Failed to create worker Pod for the cluster {self.namespace}/{self.name}, {failure}",
                        CREATE,
                    )
                    raise status.ReplicaFailureError(
                        RayClusterConditionReason.FAILED_CREATE_WORKER_POD, failure
                    )
                start += batch
                batch *= 2
        finally:
            if made:
                self.scale_event(group, "created", made, why, CREATE)

    def scale_event(self, group: str, done: str, pods: Sequence[str], why: str, action: str = DELETE) -> None:
        """Beyond upstream: one Normal `ScaledWorkerGroup` Event per scale decision carried out, naming the
        pods and the reason (the replicas asked for and the bound that applied, or `workersToDelete`)."""
        self.event(
            NORMAL,
            SCALED_WORKER_GROUP,
            f"Worker group {group}: {done} {len(pods)} Pod(s) [{' '.join(sorted(pods))}]: {why}",
            action,
        )

    async def delete_named(self, name: str, group: str, noun: str, *, count_missing: bool) -> bool:
        """Deletes the worker pod `name` of `group` with upstream's Events, whose texts differ only in the
        word for it (`noun`: "pod" for `workersToDelete`, "Pod" for random deletion). A pod already gone
        counts as deleted (expectation and Event) only with `count_missing`, as upstream's random deletion
        does; returns whether it counted."""
        try:
            gone = await self.delete(name)
        except errors.KubeError as e:
            self.event(
                WARNING, "FailedToDeleteWorkerPod", f"Failed deleting {noun} {self.namespace}/{name}, {e}"
            )
            raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_WORKER_POD, e) from e
        if not (gone or count_missing):
            return False
        self.ctx.expectations.expect(self.owner, group, name, ScaleAction.DELETE)
        self.event(NORMAL, "DeletedWorkerPod", f"Deleted {noun} {self.namespace}/{name}")
        return True

    async def delete_worker(self, p: Obj, group_name: str, note: str) -> None:
        try:
            await self.delete(podstate.pod_name(p))
        except errors.KubeError as e:
            self.event(
                WARNING,
                "FailedToDeleteWorkerPod",
                f"Failed deleting worker Pod {self.namespace}/{podstate.pod_name(p)}, {e}",
            )
            raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_WORKER_POD, e) from e
        self.ctx.expectations.expect(self.owner, group_name, podstate.pod_name(p), ScaleAction.DELETE)
        self.event(NORMAL, "DeletedWorkerPod", note)

    def check_mtls(self) -> None:
        """Pods of an mTLS cluster wait for their certificates; without cert-manager they never come."""
        if not tls.is_enabled(self.spec, self.ctx.options.gates):
            return
        reason = (
            mtls.hold_reason(self.ctx, self.cluster)
            if self.ctx.cert_manager
            else "cert-manager is not installed"
        )
        if reason is not None:
            raise MTLSHold(f"mTLS secrets not ready: {reason}")

    def random_delete_allowed(self) -> bool:
        return not autoscaler.is_enabled(self.spec) or self.ctx.options.env.random_pod_delete
