"""A RayCluster's life under the operator: scaling, self-healing, workersToDelete, suspension, deletion,
GCS FT cleanup, invalid specs and failing pods."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.errors import NotFoundError
from kuberay.runtime.resources import INGRESS, JOB, POD, SECRET, SERVICE
from support.eventually import eventually

from .conftest import Kube

WORKER = {"ray.io/node-type": "worker"}


def small_cluster(name: str, replicas: int = 2, **spec: Any) -> dict[str, Any]:
    container = {"name": "ray", "image": "rayproject/ray:2.52.0", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": replicas,
                    "minReplicas": 0,
                    "maxReplicas": 200,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [copy.deepcopy(container)]}},
                }
            ],
            **spec,
        },
    }


async def state(kube: Kube, name: str) -> str:
    return str((await kube.cluster(name)).get("status", {}).get("state", ""))


async def wait_ready_with(kube: Kube, name: str, workers: int) -> list[dict[str, Any]]:
    async def settled() -> bool:
        cluster = await kube.cluster(name)
        return (
            cluster.get("status", {}).get("readyWorkerReplicas", 0) == workers
            and cluster.get("status", {}).get("state") == "ready"
            and len(await kube.live_pods(name, **WORKER)) == workers
        )

    try:
        await eventually(settled)
    except AssertionError:
        status = (await kube.cluster(name)).get("status")
        raise AssertionError(f"{name} did not settle with {workers} ready workers: status {status}") from None
    return await kube.live_pods(name, **WORKER)


def names(pods: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


async def set_replicas(kube: Kube, name: str, replicas: int, **group: Any) -> None:
    cluster = await kube.cluster(name)
    cluster["spec"]["workerGroupSpecs"][0].update(replicas=replicas, **group)
    await kube.client.update(RAYCLUSTER, cluster)


async def test_scale_up_and_down(kube: Kube) -> None:
    await kube.create_cluster(small_cluster("scale", replicas=1))
    await wait_ready_with(kube, "scale", 1)
    await set_replicas(kube, "scale", 4)
    assert len(await wait_ready_with(kube, "scale", 4)) == 4
    await set_replicas(kube, "scale", 2)
    assert len(await wait_ready_with(kube, "scale", 2)) == 2


async def test_worker_deleted_by_hand_is_recreated(kube: Kube) -> None:
    await kube.create_cluster(small_cluster("heal", replicas=2))
    before = names(await wait_ready_with(kube, "heal", 2))
    victim = sorted(before)[0]
    await kube.client.delete(POD, victim, kube.namespace)
    after = names(await wait_ready_with(kube, "heal", 2))
    assert victim not in after
    assert len(after - before) == 1


async def test_workers_to_delete_removes_exactly_the_named_pods(kube: Kube) -> None:
    await kube.create_cluster(small_cluster("wtd", replicas=4))
    before = names(await wait_ready_with(kube, "wtd", 4))
    doomed = sorted(before)[:2]
    await set_replicas(kube, "wtd", 2, scaleStrategy={"workersToDelete": doomed})
    after = names(await wait_ready_with(kube, "wtd", 2))
    assert after == before - set(doomed)
    events = [e["message"] for e in await kube.events("wtd") if e["reason"] == "DeletedWorkerPod"]
    assert sorted(events) == sorted(f"Deleted pod {kube.namespace}/{pod}" for pod in doomed)


async def test_suspend_removes_pods_and_resume_brings_them_back(kube: Kube) -> None:
    await kube.create_cluster(small_cluster("nap", replicas=2))
    await wait_ready_with(kube, "nap", 2)
    await kube.patch_cluster("nap", {"spec": {"suspend": True}})

    async def suspended() -> bool:
        cluster = await kube.cluster("nap")
        conditions = {c["type"]: c["status"] for c in cluster["status"].get("conditions", [])}
        return (
            cluster["status"].get("state") == "suspended"
            and conditions.get("RayClusterSuspended") == "True"
            and not await kube.pods("nap")
        )

    await eventually(suspended)
    await kube.patch_cluster("nap", {"spec": {"suspend": False}})
    assert len(await wait_ready_with(kube, "nap", 2)) == 2
    conditions = {c["type"]: c["status"] for c in (await kube.cluster("nap"))["status"]["conditions"]}
    assert conditions["RayClusterSuspended"] == "False"


async def test_deleting_the_cluster_removes_everything_it_owns(kube: Kube) -> None:
    cluster = small_cluster("gone", replicas=2, authOptions={"mode": "token"})
    cluster["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
    head = cluster["spec"]["headGroupSpec"]
    head["template"]["spec"]["containers"][0]["ports"] = [{"name": "serve", "containerPort": 8000}]
    head["enableIngress"] = True
    await kube.create_cluster(cluster)
    await wait_ready_with(kube, "gone", 2)
    assert names(await kube.services("gone")) == {"gone-head-svc", "gone-serve-svc"}
    await kube.client.get(SECRET, "gone", kube.namespace)
    ingress = await kube.client.get(INGRESS, "gone-head-ingress", kube.namespace)
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == "gone-head-svc"
    await kube.client.delete(RAYCLUSTER, "gone", kube.namespace)

    async def all_gone() -> bool:
        left = [
            obj
            for kind in (SERVICE, SECRET, INGRESS)
            for obj in (await kube.client.list(kind, kube.namespace)).items
            if obj["metadata"]["name"].startswith("gone")
        ]
        return not left and not await kube.pods("gone")

    await eventually(all_gone)


async def test_gcs_ft_deletion_runs_the_redis_cleanup_job_before_the_finalizer_goes(kube: Kube) -> None:
    cluster = small_cluster("ft", replicas=1, gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    await kube.create_cluster(cluster)
    await wait_ready_with(kube, "ft", 1)
    assert (await kube.cluster("ft"))["metadata"]["finalizers"] == ["ray.io/gcs-ft-redis-cleanup-finalizer"]
    await kube.client.delete(RAYCLUSTER, "ft", kube.namespace)

    async def job_created_while_cluster_held() -> bool:
        jobs = (await kube.client.list(JOB, kube.namespace)).items
        try:
            held = await kube.cluster("ft")  # still there: the finalizer holds it
        except NotFoundError:
            # On a busy machine the Job can run to its end between two polls, and the finalizer go with it:
            # then the cluster may be gone only after its cleanup Job succeeded.
            return bool(jobs) and bool(jobs[0].get("status", {}).get("succeeded"))
        return bool(jobs) and held["metadata"].get("deletionTimestamp") is not None

    await eventually(job_created_while_cluster_held)
    (job,) = (await kube.client.list(JOB, kube.namespace)).items
    assert job["metadata"]["name"] == "ft-redis-cleanup"
    assert job["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"

    async def cluster_gone() -> bool:
        found = await kube.client.list(RAYCLUSTER, kube.namespace)
        return not found.items

    await eventually(cluster_gone)
    events = {e["reason"] for e in await kube.events("ft")}
    assert "CreatedRedisCleanupJob" in events


async def test_invalid_cluster_gets_upstreams_message_and_no_pods(kube: Kube) -> None:
    cluster = small_cluster("bad", replicas=1)
    cluster["spec"]["workerGroupSpecs"][0].update(minReplicas=3, maxReplicas=1)
    await kube.create_cluster(cluster)

    async def refused() -> bool:
        return any(e["reason"] == "InvalidRayClusterSpec" for e in await kube.events("bad"))

    await eventually(refused)
    (event,) = [e for e in await kube.events("bad") if e["reason"] == "InvalidRayClusterSpec"]
    assert event["type"] == "Warning"
    assert event["message"] == (
        f"The RayCluster spec is invalid {kube.namespace}/bad: "
        "worker group small has minReplicas 3 greater than maxReplicas 1"
    )
    assert await kube.pods("bad") == []


@pytest.mark.parametrize("failure", ["ImagePullBackOff", "CrashLoopBackOff", "OOMKilled"])
async def test_failing_worker_is_named_in_conditions_and_events(kube: Kube, failure: str) -> None:
    name = f"fail-{failure.lower()}"
    cluster = small_cluster(name, replicas=1)
    cluster["spec"]["workerGroupSpecs"][0]["template"]["metadata"] = {
        "annotations": {"localkube.io/simulate": failure}
    }
    await kube.create_cluster(cluster)

    async def reported() -> bool:
        conditions = (await kube.cluster(name)).get("status", {}).get("conditions", [])
        return any(c["type"] == "PodFailure" and c["reason"] == failure for c in conditions)

    await eventually(reported)
    (worker,) = await kube.pods(name, **WORKER)
    pod = worker["metadata"]["name"]
    (condition,) = [
        c for c in (await kube.cluster(name))["status"]["conditions"] if c["type"] == "PodFailure"
    ]
    assert condition["status"] == "True"
    assert condition["message"].startswith(f"Pod {kube.namespace}/{pod} is failing: {failure}")
    assert (await kube.cluster(name))["status"].get("state") != "ready"

    async def warned() -> bool:
        return any(
            e["reason"] == "PodFailure" and e["type"] == "Warning" and pod in e["message"]
            for e in await kube.events(name)
        )

    await eventually(warned)


async def test_recreate_strategy_replaces_every_pod_on_a_spec_change_but_not_on_scaling(kube: Kube) -> None:
    await kube.create_cluster(small_cluster("fresh", replicas=1, upgradeStrategy={"type": "Recreate"}))
    first = names(await kube.live_pods("fresh")) if await wait_ready_with(kube, "fresh", 1) else set()
    await set_replicas(kube, "fresh", 2)
    await wait_ready_with(kube, "fresh", 2)
    assert first <= names(await kube.live_pods("fresh"))  # scaling kept every pod
    cluster = await kube.cluster("fresh")
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.53.0"
    await kube.client.update(RAYCLUSTER, cluster)

    async def replaced() -> bool:
        live = await kube.live_pods("fresh")
        status = (await kube.cluster("fresh")).get("status", {})
        return len(live) == 3 and not names(live) & first and status.get("readyWorkerReplicas", 0) == 2

    await eventually(replaced)
    notes = [e["message"] for e in await kube.events("fresh") if e["reason"] == "DeletedPod"]
    assert notes == [
        f"Deleted all Pods for RayCluster {kube.namespace}/fresh due to spec change with Recreate upgradeStrategy"
    ]


async def test_multi_host_replica_losing_a_host_is_replaced_whole(kube: Kube) -> None:
    cluster = small_cluster("slice", replicas=2)
    cluster["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 2
    await kube.create_cluster(cluster)
    pods = await wait_ready_with(kube, "slice", 4)
    replicas: dict[str, set[str]] = {}
    for pod in pods:
        labels = pod["metadata"]["labels"]
        replicas.setdefault(labels["ray.io/worker-group-replica-name"], set()).add(
            labels["ray.io/replica-host-index"]
        )
    assert sorted(replicas.values(), key=sorted) == [{"0", "1"}, {"0", "1"}]
    assert {p["metadata"]["labels"]["ray.io/worker-group-replica-index"] for p in pods} == {"0", "1"}
    victim = pods[0]
    broken = victim["metadata"]["labels"]["ray.io/worker-group-replica-name"]
    await kube.client.delete(POD, victim["metadata"]["name"], kube.namespace)

    async def whole_again() -> bool:
        live = await kube.live_pods("slice", **WORKER)
        groups = {p["metadata"]["labels"]["ray.io/worker-group-replica-name"] for p in live}
        ready = (await kube.cluster("slice")).get("status", {}).get("readyWorkerReplicas", 0) == 4
        return ready and len(live) == 4 and len(groups) == 2 and broken not in groups

    await eventually(whole_again)
