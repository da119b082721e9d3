"""A worker group of `numOfHosts > 1` under RayMultiHostIndexing (upstream's `reconcileMultiHostWorkerGroup`):
pods come and go as whole replicas (all hosts of a replica share `ray.io/worker-group-replica-name`), never one
host at a time.

Order within a pass: delete incomplete replicas (and stop), delete every replica with a pod that must go,
delete the replicas named in `workersToDelete` (and stop), then create the missing replicas at the lowest
free replica indices (unless the group's `scaleGate` holds it), or (when allowed) delete surplus replicas.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import WorkerGroupSpec
from kuberay.builders import pod
from kuberay.controllers.raycluster import podstate, replicas, scalegate
from kuberay.controllers.raycluster.podwrites import PodsError, PodWriter
from kubesemantics.names import random_suffix

_RNG = random.Random()

Obj = Mapping[str, Any]


class MultiHostGroup:
    """A worker group of `numOfHosts > 1` under RayMultiHostIndexing: pods come and go as whole replicas
    (all hosts of a replica share `ray.io/worker-group-replica-name`), never one host at a time."""

    def __init__(self, writer: PodWriter, group: WorkerGroupSpec) -> None:
        self.writer = writer
        self.pod_options = writer.ctx.options.pods
        self.group_name = group.group_name
        self.hosts = group.num_of_hosts
        self.model = group

    async def _delete_replica(self, pods: Sequence[Obj], why: str) -> None:
        for p in pods:
            note = f"Deleted worker Pod {self.writer.namespace}/{podstate.pod_name(p)} for group {self.group_name}: {why}"
            await self.writer.delete_worker(p, self.group_name, note)

    async def _delete_replicas(self, doomed: Sequence[Sequence[Obj]], note: str, why: str) -> None:
        """Deletes whole replicas (`note` ends each pod's Event) and sends one `ScaledWorkerGroup` Event for
        the pods deleted, even when a later delete failed."""
        done: list[str] = []
        try:
            for pods in doomed:
                await self._delete_replica(pods, note)
                done.extend(podstate.pod_name(p) for p in pods)
        finally:
            if done:
                self.writer.scale_event(self.group_name, "deleted", done, why)

    async def reconcile(self, found: Sequence[Obj], expected: int, why: str) -> None:
        """Brings the group to `expected` pods (a multiple of `numOfHosts`) from the pods `found`; `why`
        explains `expected` in the `ScaledWorkerGroup` Events."""
        by_replica: dict[str, list[Obj]] = {}
        for p in found:
            replica = podstate.pod_labels(p).get(constants.RAY_WORKER_REPLICA_NAME_LABEL)
            if replica:
                by_replica.setdefault(replica, []).append(p)
        for replica, pods in sorted(by_replica.items()):
            if len(pods) < self.hosts:
                await self._delete_replica(pods, "cleanup of incomplete multi-host group")
                raise PodsError(f"cleaned up incomplete replica group {replica}, requeueing")

        broken: set[str] = set()
        for replica, pods in sorted(by_replica.items()):
            for p in pods:
                delete, reason = podstate.should_delete_pod(p, constants.WORKER_NODE)
                if delete and replica not in broken:
                    broken.add(replica)
                    await self._delete_replica(pods, reason)

        to_delete: set[str] = set()
        named = set(self.model.scale_strategy.workers_to_delete or []) if self.model.scale_strategy else set()
        for replica, pods in by_replica.items():
            if any(podstate.pod_name(p) in named for p in pods):
                to_delete.add(replica)
        if to_delete:
            doomed = [by_replica[replica] for replica in sorted(to_delete)]
            await self._delete_replicas(
                doomed,
                "autoscaler scale-down request",
                "whole replicas named in scaleStrategy.workersToDelete",
            )
            count = sum(len(pods) for pods in doomed)
            raise PodsError(f"deleted {count} worker Pods based on ScaleStrategy, requeueing")

        valid = {r: pods for r, pods in by_replica.items() if r not in broken}
        if expected % self.hosts:
            raise PodsError(
                f"desired worker pods {expected} of group {self.group_name} is not a multiple of numOfHosts {self.hosts}"
            )
        missing = expected // self.hosts - len(valid)
        why = f"{len(valid)} replicas running, {expected} Pods wanted ({why})"
        if scalegate.holds_creation(self.writer.cluster, self.model, missing * self.hosts, why):
            return
        if missing > 0:
            self.writer.check_mtls()
            used = {
                int(label)
                for pods in valid.values()
                if (
                    label := podstate.pod_labels(pods[0]).get(constants.RAY_WORKER_REPLICA_INDEX_LABEL, "")
                ).isdigit()
            }
            builds = []
            for index in replicas.free_indices(used, missing):
                replica_name = f"{self.group_name}-{random_suffix(_RNG)}"
                for host in range(self.hosts):
                    builds.append(
                        pod.build_worker_pod(
                            self.writer.cluster,
                            self.model,
                            self.pod_options,
                            replica_index=index,
                            replica_group_name=replica_name,
                            host_index=host,
                        )
                    )
            await self.writer.create_many(builds, self.group_name, why)
        elif missing < 0 and self.writer.random_delete_allowed():
            surplus = [valid[replica] for replica in sorted(valid)[:-missing]]
            await self._delete_replicas(surplus, "scaling down", f"whole replicas at random, {why}")
