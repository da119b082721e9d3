"""The upstream samples that name a batch scheduler (or Kueue) reconcile as upstream intends, each with the
operator started for its scheduler, on the gang-scheduling localkube: Volcano's and scheduler-plugins'
clusters get their PodGroup and are bound as a gang; YuniKorn's and KAI's pods carry their metadata and wait
for a scheduler that does not run here; the Kueue toy RayJob, with no scheduler, runs as a plain RayJob.
Queues (Volcano's, KAI's) and ConfigMaps the samples ship are created with them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from integration.rayjob.harness import Operator, operator
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.resources import POD, Resource
from kuberay.schedulers import schedulerplugins, volcano

SAMPLES = Path(__file__).resolve().parents[3] / ".." / "shared" / "upstream-samples"


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d]


async def create(op: Operator, localkube: Any, name: str) -> dict[str, Any]:
    """Creates the sample's objects; returns its RayCluster or RayJob as created."""
    made: dict[str, Any] = {}
    for doc in load(name):
        if doc["apiVersion"] == "ray.io/v1":
            doc["metadata"]["namespace"] = op.namespace
            made = await op.client.create(RAYJOB if doc["kind"] == "RayJob" else RAYCLUSTER, doc)
        else:
            if doc["kind"] not in ("Queue",):
                doc["metadata"]["namespace"] = op.namespace
            localkube.apply([doc])
    return made


async def pods(op: Operator, cluster: str, want: int, bound: bool) -> list[dict[str, Any]]:
    async def listed() -> list[dict[str, Any]] | None:
        items = (await op.client.list(POD, op.namespace, label_selector=f"ray.io/cluster={cluster}")).items
        ok = len(items) == want and all(bool(p["spec"].get("nodeName")) == bound for p in items)
        return items if ok else None

    return await op.wait(listed)  # type: ignore[no-any-return]


async def get(op: Operator, resource: Resource, name: str) -> dict[str, Any] | None:
    try:
        return await op.client.get(resource, name, op.namespace)
    except errors.NotFoundError:
        return None


VOLCANO_CLUSTERS = [
    ("ray-cluster.volcano-scheduler.yaml", {"minMember": 1, "minResources": {"cpu": "1", "memory": "2Gi"}}),
    ("ray-cluster.volcano-scheduler-queue.yaml",
     {"minMember": 3, "minResources": {"cpu": "3", "memory": "4Gi"}, "queue": "kuberay-test-queue"}),
]  # fmt: skip


@pytest.mark.parametrize(("sample", "want"), VOLCANO_CLUSTERS)
async def test_volcano_cluster_samples(gang_localkube: Any, sample: str, want: dict[str, Any]) -> None:
    async with operator(gang_localkube, batch_scheduler="volcano") as op:
        cluster = await create(op, gang_localkube, sample)
        name = cluster["metadata"]["name"]
        group = await op.wait(lambda: get(op, volcano.PODGROUP, f"ray-{name}-pg"))
        assert group["spec"] == want
        bound = await pods(op, name, want["minMember"], bound=True)
        assert {p["spec"]["schedulerName"] for p in bound} == {"volcano"}
        await op.wait(lambda: ready(op, name))


async def ready(op: Operator, name: str) -> bool:
    cluster = await get(op, RAYCLUSTER, name)
    return bool(cluster) and (cluster.get("status") or {}).get("state") == "ready"


async def test_scheduler_plugins_cluster_sample(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="scheduler-plugins") as op:
        cluster = await create(op, gang_localkube, "ray-cluster.scheduler-plugins.yaml")
        name = cluster["metadata"]["name"]
        group = await op.wait(lambda: get(op, schedulerplugins.PODGROUP, name))
        assert group["spec"] == {"minMember": 3, "minResources": {"cpu": "3", "memory": "4Gi"}}
        bound = await pods(op, name, 3, bound=True)
        assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in bound} == {name}
        await op.wait(lambda: ready(op, name))


async def test_yunikorn_cluster_sample(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="yunikorn") as op:
        cluster = await create(op, gang_localkube, "ray-cluster.yunikorn-scheduler.yaml")
        name = cluster["metadata"]["name"]
        waiting = await pods(op, name, 3, bound=False)
        for pod in waiting:
            labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
            assert (labels["applicationId"], labels["queue"]) == ("test-yunikorn-0", "root.test")
            assert annotations["yunikorn.apache.org/task-group-name"] == labels["ray.io/group"]
            groups = json.loads(annotations["yunikorn.apache.org/task-groups"])
            assert [(g["name"], g["minMember"]) for g in groups] == [("headgroup", 1), ("worker", 2)]
            assert pod["spec"]["schedulerName"] == "yunikorn"


@pytest.mark.parametrize("sample", ["ray-cluster.kai-scheduler.yaml", "ray-cluster.kai-gpu-sharing.yaml"])
async def test_kai_cluster_samples(gang_localkube: Any, sample: str) -> None:
    async with operator(gang_localkube, batch_scheduler="kai-scheduler") as op:
        cluster = await create(op, gang_localkube, sample)
        waiting = await pods(op, cluster["metadata"]["name"], 3, bound=False)
        assert {p["spec"]["schedulerName"] for p in waiting} == {"kai-scheduler"}
        assert {p["metadata"]["labels"]["kai.scheduler/queue"] for p in waiting} == {"team-a"}


async def test_volcano_rayjob_sample(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="volcano") as op:
        job = await create(op, gang_localkube, "ray-job.volcano-scheduler-queue.yaml")
        name = job["metadata"]["name"]
        group = await op.wait(lambda: get(op, volcano.PODGROUP, f"ray-{name}-pg"))
        # The submitter is not a member, but its resources are reserved.
        assert group["spec"] == {"minMember": 3, "minResources": {"cpu": "3500m", "memory": "4296Mi"},
                                 "queue": "kuberay-test-queue"}  # fmt: skip
        running = await op.wait_status(name, jobDeploymentStatus="Running")
        await pods(op, running["status"]["rayClusterName"], 3, bound=True)


async def test_yunikorn_rayjob_sample(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="yunikorn") as op:
        job = await create(op, gang_localkube, "ray-job.yunikorn-scheduler.yaml")
        initializing = await op.wait_status(job["metadata"]["name"], jobDeploymentStatus="Initializing")
        cluster_name = initializing["status"]["rayClusterName"]
        waiting = await pods(op, cluster_name, 2, bound=False)
        groups = json.loads(waiting[0]["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
        assert [g["name"] for g in groups] == ["headgroup", "small-group", "submittergroup"]


async def test_kueue_toy_rayjob_sample_runs_as_a_plain_rayjob(gang_localkube: Any) -> None:
    async with operator(gang_localkube) as op:
        job = await create(op, gang_localkube, "ray-job.kueue-toy-sample.yaml")
        running = await op.wait_status(job["metadata"]["name"], jobDeploymentStatus="Running")
        bound = await pods(op, running["status"]["rayClusterName"], 2, bound=True)
        assert {p["spec"]["schedulerName"] for p in bound} == {"default-scheduler"}
