"""`reconcile_pods`: upstream's `reconcilePods`, the head pod first, then each worker group in spec order.

Order within a pass (spec §4.6): suspension (delete everything while Suspending), the Recreate upgrade,
the head pod (create one, delete a dead one, refuse two), then per group: skip while its scale
expectations are unsatisfied, delete a suspended group, multi-host groups as whole replicas, delete dead
pods, `workersToDelete`, then create or (randomly, when allowed) delete the difference.

Invariants:
- Every create and delete is recorded in the scale expectations before the pass ends, and a group whose
  expectations the cache has not caught up with is skipped, so a stale cache never makes a pod twice or
  deletes one twice.
- Errors that upstream marks for the ReplicaFailure condition are raised as `ReplicaFailureError`; the
  others as `PodsError`. Either way the pass stops and the reconciler writes status and requeues.
- Many pods are created in slow-start batches (1, 2, 4, ...): a failing create stops the pass after one
  request, a healthy scale-up of a hundred pods takes a handful of round trips.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature
from kuberay.api.raycluster import (
    RayCluster,
    RayClusterConditionReason,
    RayClusterConditionType,
    WorkerGroupSpec,
)
from kuberay.builders import autoscaler, pod, tls
from kuberay.controllers.raycluster import recreate, status
from kuberay.controllers.raycluster.context import Context
from kuberay.runtime import errors
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.expectations import ScaleAction
from kuberay.runtime.resources import POD, ObjectKey

Obj = Mapping[str, Any]
HEAD_GROUP = ""  # the head's key in the scale expectations
DELETE, CREATE = "Delete", "Create"


class PodsError(Exception):
    """A pass of `reconcile_pods` stopped early without a ReplicaFailure reason (requeue and retry)."""


def _name(obj: Obj) -> str:
    return str(obj["metadata"].get("name") or "")


def _labels(obj: Obj) -> Mapping[str, str]:
    return obj["metadata"].get("labels") or {}


def ray_container_terminated(p: Obj) -> Obj | None:
    """The `state.terminated` of the Ray container (`spec.containers[0]`), if it has terminated."""
    containers = p.get("spec", {}).get("containers") or [{}]
    ray_name = containers[0].get("name")
    for container in (p.get("status") or {}).get("containerStatuses") or ():
        if container.get("name") == ray_name:
            terminated: Obj | None = (container.get("state") or {}).get("terminated")
            return terminated
    return None


def should_delete_pod(p: Obj, node_type: str) -> tuple[bool, str]:
    """Upstream's `shouldDeletePod`: a pod in a terminal phase, or a Running pod whose Ray container ended
    and will never restart, is deleted (and replaced); the reason says why, in upstream's words."""
    phase = status.phase(p)
    name = _name(p)
    if phase in ("Failed", "Succeeded"):
        return True, (
            f"The {node_type} Pod {name} status is {phase} which is a terminal state. "
            "KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."
        )
    terminated = ray_container_terminated(p)
    policy = p.get("spec", {}).get("restartPolicy") or ""
    if phase == "Running" and terminated is not None:
        detail = f"The Pod status of the {node_type} Pod {name} is {phase}, and the Ray container terminated status is {dict(terminated)}. "
        if policy == "Never":
            return True, detail + (
                f"The container is unable to restart due to its restart policy {policy}, so KubeRay will delete it."
            )
        return False, detail + (
            f"However, KubeRay will not delete the Pod because its restartPolicy is set to {policy} and it "
            "should be able to restart automatically."
        )
    return False, (
        f"KubeRay does not need to delete the {node_type} Pod {name}. The Pod status is {phase}, and the Ray "
        f"container terminated status is {terminated}."
    )


def _pod_summary(p: Obj) -> str:
    terminated = ray_container_terminated(p)
    return (
        f"Pod status: {status.phase(p)}; Pod restart policy: {p.get('spec', {}).get('restartPolicy') or ''}; "
        f"Ray container terminated status: {dict(terminated) if terminated is not None else None}"
    )


class PodReconciler:
    """One pass over the pods of one RayCluster (cheap to build; holds the pass's facts)."""

    def __init__(self, ctx: Context, cluster: Obj, model: RayCluster) -> None:
        self.ctx = ctx
        self.cluster = cluster
        self.model = model
        self.spec: Obj = cluster.get("spec") or {}
        self.namespace = str(cluster["metadata"].get("namespace") or "")
        self.name = str(cluster["metadata"]["name"])
        self.owner = ObjectKey(self.namespace, self.name)
        self.gates = ctx.options.gates

    # -- reading --------------------------------------------------------------------------------------------

    def _pods(self, **labels: str) -> list[Obj]:
        selector = {constants.RAY_CLUSTER_LABEL: self.name, **labels}
        # By name: the order an API server lists them in, which upstream's random deletion follows.
        return sorted(self.ctx.pods.list(self.namespace, selector), key=_name)

    def _event(self, type: str, reason: str, message: str, action: str = DELETE) -> None:
        self.ctx.event(self.cluster, type, reason, message, action)

    # -- writing --------------------------------------------------------------------------------------------

    async def _delete(self, name: str) -> bool:
        """Deletes a pod by name; False when it was already gone."""
        try:
            await self.ctx.client.delete(POD, name, self.namespace)
        except errors.NotFound:
            return False
        return True

    async def delete_all(self, **labels: str) -> list[Obj]:
        """Upstream's `deleteAllPods`: deletes the listed pods unless every one is already terminating;
        returns the list as it was before."""
        found = self._pods(**labels)
        if any(not p["metadata"].get("deletionTimestamp") for p in found):
            await asyncio.gather(*(self._delete(_name(p)) for p in found))
        return found

    async def _create(self, built: dict[str, Any], group: str) -> str:
        created = await self.ctx.client.create(POD, built, self.namespace)
        name = _name(created)
        self.ctx.expectations.expect(self.owner, group, name, ScaleAction.CREATE)
        return name

    async def _create_many(self, builds: Sequence[dict[str, Any]], group: str) -> None:
        """Creates pods in slow-start batches; the first failure stops creation and is raised marked
        `FailedCreateWorkerPod` after its Warning Event."""
        batch, start = 1, 0
        while start < len(builds):
            chunk = builds[start : start + batch]
            results = await asyncio.gather(*(self._create(b, group) for b in chunk), return_exceptions=True)
            failure: errors.KubeError | None = None
            for result in results:
                if isinstance(result, errors.KubeError):
                    failure = failure or result
                elif isinstance(result, BaseException):
                    raise result
                else:
                    self._event(
                        NORMAL, "CreatedWorkerPod", f"Created worker Pod {self.namespace}/{result}", CREATE
                    )
            if failure is not None:
                self._event(
                    WARNING,
                    "FailedToCreateWorkerPod",
                    f"Failed to create worker Pod for the cluster {self.namespace}/{self.name}, {failure}",
                    CREATE,
                )
                raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_CREATE_WORKER_POD, failure)
            start += batch
            batch *= 2

    # -- the pass -------------------------------------------------------------------------------------------

    async def run(self) -> None:
        suspend = status.suspend_status(self.cluster.get("status") or {})
        conditions = self.ctx.options.conditions_enabled
        if suspend == RayClusterConditionType.SUSPENDING or (
            not conditions and self.spec.get("suspend") is True
        ):
            await self._delete_for(
                f"Deleted Pods for RayCluster {self.namespace}/{self.name} due to suspension",
                "Failed deleting Pods due to suspension for RayCluster",
            )
            return
        if conditions and (suspend == RayClusterConditionType.SUSPENDED or self.spec.get("suspend") is True):
            return
        if await self._recreate_for_upgrade():
            return
        if await self._reconcile_head():
            return
        for index, group in enumerate(self.spec.get("workerGroupSpecs") or ()):
            await self._reconcile_group(group, (self.model.spec.worker_group_specs or [])[index])

    async def _delete_for(self, note: str, failure: str) -> None:
        """Deletes every pod of the cluster; `note` is the Normal Event's text, `failure` the Warning's
        prefix."""
        try:
            await self.delete_all()
        except errors.KubeError as e:
            self._event(
                WARNING, "FailedToDeletePodCollection", f"{failure} {self.namespace}/{self.name}, {e}"
            )
            raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_ALL_PODS, e) from e
        self._event(NORMAL, "DeletedPod", note)

    async def _recreate_for_upgrade(self) -> bool:
        if not recreate.is_recreate(self.spec):
            return False
        heads = self._pods(**{constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE})
        if not heads:
            return False
        expected = recreate.spec_hash(self.spec)
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
            await self.ctx.client.patch(POD, _name(heads[0]), patch, self.namespace)
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
        if not self.ctx.expectations.satisfied(self.owner, HEAD_GROUP):
            return False
        heads = self._pods(**{constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE})
        if len(heads) == 1:
            head = heads[0]
            delete, reason = should_delete_pod(head, constants.HEAD_NODE)
            if not delete:
                return False
            summary = f"{self.namespace}/{_name(head)}; {_pod_summary(head)}"
            try:
                await self._delete(_name(head))
            except errors.KubeError as e:
                self._event(WARNING, "FailedToDeleteHeadPod", f"Failed deleting head Pod {summary}, {e}")
                raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_HEAD_POD, e) from e
            self.ctx.expectations.expect(self.owner, HEAD_GROUP, _name(head), ScaleAction.DELETE)
            self._event(NORMAL, "DeletedHeadPod", f"Deleted head Pod {summary}")
            raise PodsError(reason)
        if len(heads) > 1:
            listed = " ".join(_name(h) for h in heads)
            raise PodsError(f"{len(heads)} head pods found [{listed}]. Please delete extra head pods")
        annotations = self.cluster["metadata"].get("annotations") or {}
        if (
            status.is_condition_true(self.cluster.get("status") or {}, RayClusterConditionType.PROVISIONED)
            and annotations.get(constants.DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION) == "true"
        ):
            return True
        self._check_mtls()
        built = pod.build_head_pod(
            self.model, self.ctx.options.pods, recreate_hash=recreate.spec_hash(self.spec)
        )
        try:
            name = await self._create(built, HEAD_GROUP)
        except errors.KubeError as e:
            wanted = built["metadata"].get("name") or built["metadata"].get("generateName")
            self._event(
                WARNING,
                "FailedToCreateHeadPod",
                f"Failed to create head Pod {self.namespace}/{wanted}, {e}",
                CREATE,
            )
            raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_CREATE_HEAD_POD, e) from e
        self._event(NORMAL, "CreatedHeadPod", f"Created head Pod {self.namespace}/{name}", CREATE)
        return False

    def _check_mtls(self) -> None:
        """Pods of an mTLS cluster wait for their certificates; without cert-manager they never come."""
        if tls.is_enabled(self.spec, self.gates) and not self.ctx.options.cert_manager:
            raise PodsError("mTLS secrets not ready: cert-manager is not installed")

    def _random_delete_allowed(self) -> bool:
        return not autoscaler.is_enabled(self.spec) or self.ctx.options.env.random_pod_delete

    async def _reconcile_group(self, group: Obj, model: WorkerGroupSpec) -> None:
        group_name = str(group.get("groupName") or "")
        if not self.ctx.expectations.satisfied(self.owner, group_name):
            return
        expected = status.group_desired_replicas(group)
        selector = {constants.RAY_NODE_GROUP_LABEL: group_name}
        found = self._pods(**selector)
        if group.get("suspend") is True:
            try:
                await self.delete_all(**selector)
            except errors.KubeError as e:
                self._event(
                    WARNING,
                    "FailedToDeleteWorkerPodCollection",
                    f"Failed deleting worker Pods for suspended group {group_name} in RayCluster {self.namespace}/{self.name}, {e}",
                )
                raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_WORKER_POD, e) from e
            self._event(
                NORMAL,
                "DeletedWorkerPod",
                f"Deleted all pods for suspended worker group {group_name} in RayCluster {self.namespace}/{self.name}",
            )
            return
        hosts = int(group.get("numOfHosts") or 1)
        if hosts > 1 and self.gates.enabled(Feature.RAY_MULTI_HOST_INDEXING):
            await MultiHostGroup(self, group_name, hosts, model).reconcile(found, expected)
            return

        deleted: set[str] = set()
        for p in found:
            delete, _ = should_delete_pod(p, constants.WORKER_NODE)
            if delete:
                await self._delete_worker(
                    p, group_name, f"Deleted worker Pod {self.namespace}/{_name(p)}; {_pod_summary(p)}"
                )
                deleted.add(_name(p))
        if deleted:
            raise PodsError(f"delete {len(deleted)} unhealthy worker Pods")

        for name in (group.get("scaleStrategy") or {}).get("workersToDelete") or ():
            try:
                gone = await self._delete(name)
            except errors.KubeError as e:
                self._event(
                    WARNING, "FailedToDeleteWorkerPod", f"Failed deleting pod {self.namespace}/{name}, {e}"
                )
                raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_WORKER_POD, e) from e
            if gone:
                self.ctx.expectations.expect(self.owner, group_name, name, ScaleAction.DELETE)
                deleted.add(name)
                self._event(NORMAL, "DeletedWorkerPod", f"Deleted pod {self.namespace}/{name}")

        running = [p for p in found if _name(p) not in deleted]
        diff = expected - len(running)
        if diff > 0:
            self._check_mtls()
            used = {
                int(label)
                for p in running
                if (label := _labels(p).get(constants.RAY_WORKER_REPLICA_INDEX_LABEL, "")).isdigit()
            }
            builds = []
            for index in _free_indices(used, diff):
                builds.append(
                    pod.build_worker_pod(self.model, model, self.ctx.options.pods, replica_index=index)
                )
            await self._create_many(builds, group_name)
        elif diff < 0 and self._random_delete_allowed():
            for p in running[:-diff]:
                try:
                    await self._delete(_name(p))
                except errors.KubeError as e:
                    self._event(
                        WARNING,
                        "FailedToDeleteWorkerPod",
                        f"Failed deleting Pod {self.namespace}/{_name(p)}, {e}",
                    )
                    raise status.ReplicaFailureError(
                        RayClusterConditionReason.FAILED_DELETE_WORKER_POD, e
                    ) from e
                self.ctx.expectations.expect(self.owner, group_name, _name(p), ScaleAction.DELETE)
                self._event(NORMAL, "DeletedWorkerPod", f"Deleted Pod {self.namespace}/{_name(p)}")

    async def _delete_worker(self, p: Obj, group_name: str, note: str) -> None:
        try:
            await self._delete(_name(p))
        except errors.KubeError as e:
            self._event(
                WARNING,
                "FailedToDeleteWorkerPod",
                f"Failed deleting worker Pod {self.namespace}/{_name(p)}, {e}",
            )
            raise status.ReplicaFailureError(RayClusterConditionReason.FAILED_DELETE_WORKER_POD, e) from e
        self.ctx.expectations.expect(self.owner, group_name, _name(p), ScaleAction.DELETE)
        self._event(NORMAL, "DeletedWorkerPod", note)


def _free_indices(used: set[int], count: int) -> list[int]:
    """The `count` lowest non-negative integers not in `used`."""
    free: list[int] = []
    candidate = 0
    while len(free) < count:
        if candidate not in used:
            free.append(candidate)
        candidate += 1
    return free


def _random_suffix() -> str:
    return "".join(
        random.choice(constants.RANDOM_SUFFIX_ALPHABET) for _ in range(constants.RANDOM_SUFFIX_LENGTH)
    )


class MultiHostGroup:
    """A worker group of `numOfHosts > 1` under RayMultiHostIndexing: pods come and go as whole replicas
    (all hosts of a replica share `ray.io/worker-group-replica-name`), never one host at a time."""

    def __init__(self, owner: PodReconciler, group_name: str, hosts: int, model: WorkerGroupSpec) -> None:
        self.owner = owner
        self.group_name = group_name
        self.hosts = hosts
        self.model = model

    async def _delete_replica(self, pods: Sequence[Obj], why: str) -> None:
        o = self.owner
        for p in pods:
            note = f"Deleted worker Pod {o.namespace}/{_name(p)} for group {self.group_name}: {why}"
            await o._delete_worker(p, self.group_name, note)

    async def reconcile(self, found: Sequence[Obj], expected: int) -> None:
        o = self.owner
        replicas: dict[str, list[Obj]] = {}
        for p in found:
            replica = _labels(p).get(constants.RAY_WORKER_REPLICA_NAME_LABEL)
            if replica:
                replicas.setdefault(replica, []).append(p)
        for replica, pods in sorted(replicas.items()):
            if len(pods) < self.hosts:
                await self._delete_replica(pods, "cleanup of incomplete multi-host group")
                raise PodsError(f"cleaned up incomplete replica group {replica}, requeueing")

        broken: set[str] = set()
        for replica, pods in sorted(replicas.items()):
            for p in pods:
                delete, reason = should_delete_pod(p, constants.WORKER_NODE)
                if delete and replica not in broken:
                    broken.add(replica)
                    await self._delete_replica(pods, reason)

        to_delete: set[str] = set()
        named = set(self.model.scale_strategy.workers_to_delete or []) if self.model.scale_strategy else set()
        for replica, pods in replicas.items():
            if any(_name(p) in named for p in pods):
                to_delete.add(replica)
        if to_delete:
            count = 0
            for replica in sorted(to_delete):
                await self._delete_replica(replicas[replica], "autoscaler scale-down request")
                count += len(replicas[replica])
            raise PodsError(f"deleted {count} worker Pods based on ScaleStrategy, requeueing")

        valid = {r: pods for r, pods in replicas.items() if r not in broken}
        if expected % self.hosts:
            raise PodsError(
                f"desired worker pods {expected} of group {self.group_name} is not a multiple of numOfHosts {self.hosts}"
            )
        missing = expected // self.hosts - len(valid)
        if missing > 0:
            o._check_mtls()
            used = {
                int(label)
                for pods in valid.values()
                if (label := _labels(pods[0]).get(constants.RAY_WORKER_REPLICA_INDEX_LABEL, "")).isdigit()
            }
            builds = []
            for index in _free_indices(used, missing):
                replica_name = f"{self.group_name}-{_random_suffix()}"
                for host in range(self.hosts):
                    builds.append(
                        pod.build_worker_pod(
                            o.model,
                            self.model,
                            o.ctx.options.pods,
                            replica_index=index,
                            replica_group_name=replica_name,
                            host_index=host,
                        )
                    )
            await o._create_many(builds, self.group_name)
        elif missing < 0 and o._random_delete_allowed():
            for replica in sorted(valid)[:-missing]:
                await self._delete_replica(valid[replica], "scaling down")
