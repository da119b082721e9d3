"""The NetworkPolicy controller (gate `RayClusterNetworkPolicy`; upstream's `NetworkPolicyController`): keeps
each RayCluster's NetworkPolicies equal to `builders.networkpolicy.build_network_policies`, and removes the ones
it made that are no longer wanted (all of them when `spec.networkPolicy` is removed).

It only touches policies it controls: a policy with a wanted name but another owner is a name collision,
reported as a Warning Event and an error, never overwritten. It wakes on RayCluster generation changes and
on changes to the policies it owns; it has no periodic requeue.
"""

from __future__ import annotations

import copy
from typing import Any

from kuberay.api.raycluster import RayCluster
from kuberay.api.settings import OperatorSettings
from kuberay.builders import networkpolicy, ownership
from kuberay.controllers.raycluster.reconciler import is_managed_elsewhere
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.controller import Controller, Result, TemporaryError
from kuberay.runtime.events import NORMAL, WARNING, EventRecorder
from kuberay.runtime.informer import Event, EventType
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import NETWORK_POLICY, ObjectKey

CONTROLLER_NAME = "networkpolicy"


def _generation_changed(event: Event) -> bool:
    if event.type is not EventType.MODIFIED or event.old is None:
        return True
    return bool(event.old["metadata"].get("generation") != event.obj["metadata"].get("generation"))


class NetworkPolicyReconciler:
    def __init__(
        self, client: Client, clusters: Store, policies: Store, recorder: EventRecorder | None
    ) -> None:
        self.client = client
        self.clusters = clusters
        self.policies = policies
        self.recorder = recorder

    def _event(self, cluster: Any, type: str, reason: str, message: str, action: str) -> None:
        if self.recorder is not None:
            self.recorder.record(cluster, type, reason, message, action)

    def _owned(self, cluster: Any) -> list[Any]:
        uid = cluster["metadata"].get("uid")
        labelled = self.policies.list(
            cluster["metadata"]["namespace"], {"ray.io/cluster": cluster["metadata"]["name"]}
        )
        return [p for p in labelled if (ownership.controller_of(p["metadata"]) or {}).get("uid") == uid]

    async def reconcile(self, key: ObjectKey) -> Result:
        cluster = self.clusters.get(key)
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return Result()
        if is_managed_elsewhere(cluster.get("spec") or {}):
            return Result()
        model = RayCluster.parse(copy.deepcopy(dict(cluster)))
        desired = networkpolicy.build_network_policies(model)
        for policy in desired:
            await self._apply(cluster, policy)
        wanted = {p["metadata"]["name"] for p in desired}
        for policy in self._owned(cluster):
            name = policy["metadata"]["name"]
            if name in wanted:
                continue
            try:
                await self.client.delete(NETWORK_POLICY, name, key.namespace)
            except errors.NotFoundError:
                continue
            except errors.KubeError as e:
                self._event(
                    cluster, WARNING, "FailedToDeleteNetworkPolicy",
                    f"Failed to delete NetworkPolicy {key.namespace}/{name}: {e}", "Delete",
                )  # fmt: skip
                raise
            self._event(
                cluster,
                NORMAL,
                "DeletedNetworkPolicy",
                f"Deleted NetworkPolicy {key.namespace}/{name}",
                "Delete",
            )
        return Result()

    async def _apply(self, cluster: Any, policy: dict[str, Any]) -> None:
        namespace, name = policy["metadata"]["namespace"], policy["metadata"]["name"]
        try:
            await self.client.create(NETWORK_POLICY, policy)
        except errors.AlreadyExistsError:
            pass
        except errors.KubeError as e:
            self._event(
                cluster, WARNING, "FailedToCreateNetworkPolicy",
                f"Failed to create NetworkPolicy {namespace}/{name}: {e}", "Create",
            )  # fmt: skip
            raise
        else:
            self._event(
                cluster, NORMAL, "CreatedNetworkPolicy", f"Created NetworkPolicy {namespace}/{name}", "Create"
            )
            return
        live = await self.client.get(NETWORK_POLICY, name, namespace)
        if (ownership.controller_of(live["metadata"]) or {}).get("uid") != cluster["metadata"].get("uid"):
            message = f"NetworkPolicy {namespace}/{name} already exists and is not owned by this RayCluster"
            self._event(
                cluster, WARNING, "NetworkPolicyNameCollision",
                f"{message}, network isolation will not be applied. Rename the existing NetworkPolicy or use a "
                "different RayCluster name to avoid the collision", "Validate",
            )  # fmt: skip
            raise TemporaryError(message)
        wanted = networkpolicy.with_default_protocols(policy)
        if (
            live.get("spec") == wanted["spec"]
            and (live["metadata"].get("labels") or {}) == wanted["metadata"]["labels"]
        ):
            return
        live["spec"] = wanted["spec"]
        live["metadata"]["labels"] = wanted["metadata"]["labels"]
        try:
            await self.client.update(NETWORK_POLICY, live)
        except errors.KubeError as e:
            self._event(
                cluster, WARNING, "FailedToUpdateNetworkPolicy",
                f"Failed to update NetworkPolicy {namespace}/{name}: {e}", "Update",
            )  # fmt: skip
            raise
        self._event(
            cluster, NORMAL, "UpdatedNetworkPolicy", f"Updated NetworkPolicy {namespace}/{name}", "Update"
        )


def install(manager: Manager, settings: OperatorSettings) -> NetworkPolicyReconciler:
    reconciler = NetworkPolicyReconciler(
        manager.client, manager.cache(RAYCLUSTER), manager.cache(NETWORK_POLICY), manager.recorder
    )
    controller = (
        Controller(
            CONTROLLER_NAME,
            reconciler.reconcile,
            concurrency=settings.config.reconcile_concurrency,
            clock=manager.clock,
            timeout=settings.runtime.reconcile_timeout,
        )
        .for_(RAYCLUSTER, _generation_changed)
        .owns(NETWORK_POLICY)
    )
    manager.add(controller)
    return reconciler
