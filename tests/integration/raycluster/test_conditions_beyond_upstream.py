"""Two conditions beyond upstream, from its open proposals, under the operator: `Valid` (kuberay#4975: a
refused spec is observed, and says why) and `OrphanedWorkerGroup` (kuberay#5143: pods of a worker group
removed from the spec are surfaced, and here drained)."""

from __future__ import annotations

import copy
from typing import Any

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.resources import POD
from support.eventually import eventually

from .conftest import Kube
from .test_lifecycle import WORKER, names, small_cluster, wait_ready_with


def conditions(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in cluster.get("status", {}).get("conditions") or ()}


async def test_a_refused_spec_is_observed_with_valid_false_and_a_fix_turns_it_true(kube: Kube) -> None:
    cluster = small_cluster("refused", replicas=1)
    cluster["spec"]["workerGroupSpecs"][0].update(minReplicas=3, maxReplicas=1)
    await kube.create_cluster(cluster)
    message = (
        f"The RayCluster spec is invalid {kube.namespace}/refused: "
        "worker group small has minReplicas 3 greater than maxReplicas 1"
    )

    async def observed_as_invalid() -> bool:
        found = await kube.cluster("refused")
        valid = conditions(found).get("Valid", {})
        return found.get("status", {}).get("observedGeneration") == 1 and valid.get("status") == "False"

    await eventually(observed_as_invalid)
    found = await kube.cluster("refused")
    valid = conditions(found)["Valid"]
    assert (valid["reason"], valid["message"]) == ("ValidationFailed", message)

    # The Event upstream sends is still sent, with the same text.
    # Recorded after the status write, so perhaps not yet there when the condition is.
    async def refusals() -> list[dict[str, Any]]:
        return [e for e in await kube.events("refused") if e["reason"] == "InvalidRayClusterSpec"]

    (event,) = await eventually(refusals)
    assert (event["type"], event["message"]) == ("Warning", message)
    assert await kube.pods("refused") == []

    await kube.patch_cluster("refused", {"spec": {"workerGroupSpecs": [{**found["spec"]["workerGroupSpecs"][0], "minReplicas": 0, "maxReplicas": 3}]}})  # fmt: skip
    await wait_ready_with(kube, "refused", 1)

    async def observed_as_valid() -> bool:
        found = await kube.cluster("refused")
        valid = conditions(found).get("Valid", {})
        return found["status"].get("observedGeneration") == 2 and valid.get("status") == "True"

    await eventually(observed_as_valid)
    found = await kube.cluster("refused")
    assert conditions(found)["Valid"]["reason"] == "RayClusterSpecValid"
    # The conditions upstream writes are there as ever.
    assert conditions(found)["HeadPodReady"]["status"] == "True"
    assert conditions(found)["RayClusterProvisioned"]["status"] == "True"


HOLD = "kuberay.test/hold"


async def test_pods_of_a_removed_worker_group_are_announced_drained_and_the_condition_clears(
    kube: Kube,
) -> None:
    cluster = small_cluster("prune", replicas=1)
    extra = copy.deepcopy(cluster["spec"]["workerGroupSpecs"][0])
    extra.update(groupName="extra", replicas=2)
    cluster["spec"]["workerGroupSpecs"].append(extra)
    await kube.create_cluster(cluster)
    await wait_ready_with(kube, "prune", 3)
    kept = names(await kube.live_pods("prune", **{**WORKER, "ray.io/group": "small"}))
    doomed = sorted(names(await kube.live_pods("prune", **{**WORKER, "ray.io/group": "extra"})))
    assert len(kept) == 1 and len(doomed) == 2
    # The test's own finalizer holds one of them after its deletion, so the drain can be seen under way
    # (a pod that is terminating still holds its node, and the condition stays).
    held = doomed[0]
    await kube.client.patch(POD, held, {"metadata": {"finalizers": [HOLD]}}, kube.namespace)

    found = await kube.cluster("prune")
    found["spec"]["workerGroupSpecs"] = found["spec"]["workerGroupSpecs"][:1]
    await kube.client.update(RAYCLUSTER, found)
    draining = (
        "Worker groups removed from spec.workerGroupSpecs still have Pods: extra (1 Pod); deleting them"
    )

    async def draining_one_held() -> bool:
        left = await kube.pods("prune", **{"ray.io/group": "extra"})
        condition = conditions(await kube.cluster("prune")).get("OrphanedWorkerGroup", {})
        return (
            [p["metadata"]["name"] for p in left] == [held]
            and bool(left[0]["metadata"].get("deletionTimestamp"))
            and condition.get("message") == draining
        )

    await eventually(draining_one_held)
    condition = conditions(await kube.cluster("prune"))["OrphanedWorkerGroup"]
    assert (condition["status"], condition["reason"]) == ("True", "OrphanedWorkerGroupPodsFound")

    await kube.client.patch(POD, held, {"metadata": {"finalizers": None}}, kube.namespace)

    async def drained_and_cleared() -> bool:
        left = await kube.pods("prune", **{"ray.io/group": "extra"})
        return not left and "OrphanedWorkerGroup" not in conditions(await kube.cluster("prune"))

    await eventually(drained_and_cleared)
    # The group still in the spec kept its pod, and the cluster is whole again.
    assert names(await wait_ready_with(kube, "prune", 1)) == kept

    events = await kube.events("prune")
    (announced,) = [e for e in events if e["reason"] == "OrphanedWorkerGroupPodsDetected"]
    assert announced["type"] == "Warning"
    assert announced["message"] == (
        f"Worker group extra of RayCluster {kube.namespace}/prune is no longer in spec.workerGroupSpecs "
        f"but has 2 Pod(s) [{' '.join(doomed)}]; deleting them"
    )
    # Deleted by the ordinary worker deletion, once each: one DeletedWorkerPod Event per pod.
    deleted = [e for e in events if e["reason"] == "DeletedWorkerPod"]
    assert sorted(e["message"] for e in deleted) == [f"Deleted Pod {kube.namespace}/{pod}" for pod in doomed]
    assert all(e.get("count", 1) == 1 for e in deleted)
