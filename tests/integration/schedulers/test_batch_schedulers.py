"""Batch schedulers end to end (operator in this process, localkube in simulate mode): for each scheduler, a
RayCluster and RayJobs in K8sJobMode and HTTPMode make the objects, labels, annotations and schedulerNames of
spec ecosystem §1; localkube's gang mode binds a Volcano or scheduler-plugins group only when it fits;
a finished RayJob gives its PodGroup back; a missing CRD is reported once instead of failing reconciles.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from integration.rayjob.harness import Operator, operator
from kuberay.api.features import FeatureGates
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.controller import TemporaryError
from kuberay.runtime.resources import JOB, POD, ObjectKey
from kuberay.schedulers import kubernetes_was, schedulerplugins, volcano
from kubesemantics import quantity
from localkube.node.kubelet import DEFAULT_CAPACITY
from support.eventually import eventually

IMAGE = "rayproject/ray:2.52.0"
GANG = "ray.io/gang-scheduling-enabled"

# A worker asking for 60 % of the CPUs of localkube's simulated node: one fits, two do not.
GANG_TOO_BIG_CPU = str(math.ceil(quantity.parse(DEFAULT_CAPACITY["cpu"]) * 6 / 10))


def container(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {"name": name, "image": IMAGE, "resources": {"requests": {"cpu": cpu, "memory": memory},
                                                          "limits": {"cpu": cpu, "memory": memory}}}  # fmt: skip


def cluster_spec(workers: int = 2, worker_cpu: str = "1") -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container("ray-head", "1", "2Gi")]}}},
        "workerGroupSpecs": [{"groupName": "small", "replicas": workers, "minReplicas": 0, "maxReplicas": 4,
                              "rayStartParams": {},
                              "template": {"spec": {"containers": [container("ray-worker", worker_cpu, "1Gi")]}}}],
    }  # fmt: skip


def raycluster(ns: str, name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": cluster_spec(**spec)}  # fmt: skip


def rayjob(ns: str, name: str, labels: dict[str, str], mode: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"entrypoint": "python -c 'print(1)'", "submissionMode": mode, "rayClusterSpec": cluster_spec(),
                     **spec}}  # fmt: skip


async def pods_of(op: Operator, cluster: str, want: int) -> list[dict[str, Any]]:
    async def listed() -> list[dict[str, Any]] | None:
        items = (await op.client.list(POD, op.namespace, label_selector=f"ray.io/cluster={cluster}")).items
        return items if len(items) >= want else None

    return await eventually(listed, 60, f"{want} pods of {cluster}")  # type: ignore[no-any-return]


async def get(op: Operator, resource: Any, name: str) -> dict[str, Any] | None:
    try:
        return await op.client.get(resource, name, op.namespace)
    except errors.NotFoundError:
        return None


def by_group(pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["labels"]["ray.io/group"]: p for p in pods}


# --- RayCluster: pods and objects per scheduler ---------------------------------------------------------------

CLUSTER_CASES = [
    # scheduler flag, RayCluster labels, pod schedulerName, pod labels wanted, pod annotations wanted (per group)
    ("volcano", {"volcano.sh/queue-name": "q1", "ray.io/priority-class-name": "high"}, "volcano",
     {"volcano.sh/queue-name": "q1", "ray.io/priority-class-name": "high"},
     lambda g: {"scheduling.k8s.io/group-name": "ray-rc-pg", "volcano.sh/task-spec": g}),
    ("yunikorn", {"yunikorn.apache.org/app-id": "app-1", "yunikorn.apache.org/queue": "root.q"}, "yunikorn",
     {"applicationId": "app-1", "queue": "root.q"}, lambda g: {}),
    ("scheduler-plugins", {GANG: "true"}, "scheduler-plugins-scheduler",
     {"scheduling.x-k8s.io/pod-group": "rc"}, lambda g: {}),
    ("kai-scheduler", {"kai.scheduler/queue": "team-a"}, "kai-scheduler", {"kai.scheduler/queue": "team-a"},
     lambda g: {}),
]  # fmt: skip


@pytest.mark.parametrize(("flag", "labels", "scheduler", "pod_labels", "pod_annotations"), CLUSTER_CASES)
async def test_a_rayclusters_pods_carry_the_schedulers_metadata(
    gang_localkube: Any, flag: str, labels: dict[str, str], scheduler: str, pod_labels: dict[str, str],
    pod_annotations: Any,
) -> None:  # fmt: skip
    async with operator(gang_localkube, batch_scheduler=flag) as op:
        await op.create(raycluster(op.namespace, "rc", labels))
        pods = by_group(await pods_of(op, "rc", 3))
        assert set(pods) == {"headgroup", "small"}
        for group, pod in pods.items():
            assert pod["spec"]["schedulerName"] == scheduler
            assert pod_labels.items() <= pod["metadata"]["labels"].items()
            task = "headgroup" if group == "headgroup" else "small"
            assert pod_annotations(task).items() <= (pod["metadata"].get("annotations") or {}).items()
        if flag in ("yunikorn", "kai-scheduler"):
            # localkube does not stand in for them: their pods stay Pending, unbound, as on such a cluster.
            assert all(not p["spec"].get("nodeName") for p in pods.values())


async def test_volcano_podgroup_of_a_raycluster(gang_localkube: Any) -> None:
    labels = {"volcano.sh/queue-name": "q1", "ray.io/priority-class-name": "high",
              "volcano.sh/network-topology-mode": "soft", "volcano.sh/network-topology-highest-tier-allowed": "2"}  # fmt: skip
    async with operator(gang_localkube, batch_scheduler="volcano") as op:
        created = await op.create(raycluster(op.namespace, "rc", labels))
        group = await op.wait(lambda: get(op, volcano.PODGROUP, "ray-rc-pg"))
        assert group["spec"] == {"minMember": 3, "minResources": {"cpu": "3", "memory": "4Gi"}, "queue": "q1",
                                 "priorityClassName": "high", "networkTopology": {"mode": "soft", "highestTierAllowed": 2}}  # fmt: skip
        (owner,) = group["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == (
            "RayCluster",
            created["metadata"]["uid"],
            True,
        )
        # Scaling the cluster resizes the group; queue and priority stay as created.
        await op.client.patch(
            RAYCLUSTER,
            "rc",
            {"spec": {"workerGroupSpecs": [{**cluster_spec(3)["workerGroupSpecs"][0]}]}},
            op.namespace,
        )

        async def resized() -> dict[str, Any] | None:
            live = await get(op, volcano.PODGROUP, "ray-rc-pg")
            return live if live and live["spec"]["minMember"] == 4 else None

        live = await op.wait(resized)
        assert live["spec"]["minResources"] == {"cpu": "4", "memory": "5Gi"}
        assert live["spec"]["queue"] == "q1"


async def test_volcano_podgroup_of_an_autoscaling_raycluster_uses_the_minimum(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="volcano") as op:
        body = raycluster(op.namespace, "auto", {})
        body["spec"]["enableInTreeAutoscaling"] = True
        body["spec"]["workerGroupSpecs"][0]["minReplicas"] = 1
        await op.create(body)
        group = await op.wait(lambda: get(op, volcano.PODGROUP, "ray-auto-pg"))
        assert (group["spec"]["minMember"], group["spec"]["minResources"]) == (
            2,
            {"cpu": "2", "memory": "3Gi"},
        )


async def test_scheduler_plugins_podgroup_only_with_the_gang_label(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="scheduler-plugins") as op:
        created = await op.create(raycluster(op.namespace, "gang", {GANG: ""}))
        await op.create(raycluster(op.namespace, "plain", {}))
        group = await op.wait(lambda: get(op, schedulerplugins.PODGROUP, "gang"))
        assert group["spec"] == {"minMember": 3, "minResources": {"cpu": "3", "memory": "4Gi"}}
        assert group["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "name": "gang",
                "uid": created["metadata"]["uid"],
            }
        ]
        plain = await pods_of(op, "plain", 3)
        assert all("scheduling.x-k8s.io/pod-group" not in p["metadata"]["labels"] for p in plain)
        assert all(p["spec"]["schedulerName"] == "scheduler-plugins-scheduler" for p in plain)
        assert await get(op, schedulerplugins.PODGROUP, "plain") is None


# --- localkube's gang mode ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "labels", "group_resource", "group_name", "bound_phase"), [
    ("volcano", {}, volcano.PODGROUP, "ray-{}-pg", "Running"),
    ("scheduler-plugins", {GANG: "true"}, schedulerplugins.PODGROUP, "{}", "Scheduled"),
])  # fmt: skip
async def test_gang_binds_a_group_only_when_it_fits(
    gang_localkube: Any,
    flag: str,
    labels: dict[str, str],
    group_resource: Any,
    group_name: str,
    bound_phase: str,
) -> None:
    async with operator(gang_localkube, batch_scheduler=flag) as op:
        # Two workers of 60 % of the simulated node's CPUs cannot run together, so no pod of the gang runs.
        await op.create(raycluster(op.namespace, "big", labels, workers=2, worker_cpu=GANG_TOO_BIG_CPU))
        await op.create(raycluster(op.namespace, "fits", labels, workers=2, worker_cpu="2"))
        fits = await pods_of(op, "fits", 3)

        async def all_bound() -> bool:
            pods = (await op.client.list(POD, op.namespace, label_selector="ray.io/cluster=fits")).items
            return len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods)

        await op.wait(all_bound)
        assert len(fits) == 3

        async def phase(name: str, want: str) -> bool:
            group = await get(op, group_resource, group_name.format(name))
            return bool(group) and (group.get("status") or {}).get("phase") == want

        await op.wait(lambda: phase("fits", bound_phase))

        async def refused() -> list[dict[str, Any]] | None:
            pods = (await op.client.list(POD, op.namespace, label_selector="ray.io/cluster=big")).items
            conditions = [c for p in pods for c in (p.get("status") or {}).get("conditions") or []
                          if c["type"] == "PodScheduled" and c["status"] == "False"]  # fmt: skip
            return pods if len(pods) == 3 and len(conditions) == 3 else None

        big = await op.wait(refused)
        assert all(not p["spec"].get("nodeName") for p in big)
        message = next(c["message"] for c in big[0]["status"]["conditions"] if c["type"] == "PodScheduled")
        assert "is not ready: 2 of its pods fit, minMember is 3" in message
        await op.wait(lambda: phase("big", "Pending"))


# --- RayJobs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["K8sJobMode", "HTTPMode"])
async def test_volcano_rayjob(gang_localkube: Any, mode: str) -> None:
    async with operator(gang_localkube, batch_scheduler="volcano") as op:
        job = await op.create(rayjob(op.namespace, "vj", {"volcano.sh/queue-name": "q1"}, mode))
        group = await op.wait(lambda: get(op, volcano.PODGROUP, "ray-vj-pg"))
        submitter = (
            {"cpu": "3500m", "memory": "4296Mi"} if mode == "K8sJobMode" else {"cpu": "3", "memory": "4Gi"}
        )
        assert group["spec"] == {"minMember": 3, "minResources": submitter, "queue": "q1"}
        assert group["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
        running = await op.wait_status("vj", jobDeploymentStatus="Running")
        name = running["status"]["rayClusterName"]
        cluster = await op.cluster(name)
        assert cluster is not None
        annotations = cluster["metadata"].get("annotations") or {}
        if mode == "K8sJobMode":  # only then is the RayJob's cluster itself stamped
            assert annotations == {"scheduling.k8s.io/group-name": "ray-vj-pg", "volcano.sh/task-spec": ""}
            assert "schedulerName" not in json.dumps(cluster["metadata"])
        else:
            assert annotations == {}
        # The cluster makes no group of its own: its pods join the RayJob's.
        assert await get(op, volcano.PODGROUP, f"ray-{name}-pg") is None
        pods = by_group(await pods_of(op, name, 3))
        for group_name, pod in pods.items():
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-vj-pg"
            assert pod["metadata"]["annotations"]["volcano.sh/task-spec"] == group_name
            assert pod["spec"]["schedulerName"] == "volcano"
        if mode == "K8sJobMode":
            submitter_job = await op.wait(lambda: get(op, JOB, "vj"))
            template = submitter_job["spec"]["template"]
            assert template["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "ray-vj-pg",
                                                           "volcano.sh/task-spec": "submittergroup"}  # fmt: skip
            assert template["metadata"]["labels"]["volcano.sh/queue-name"] == "q1"
            assert template["spec"]["schedulerName"] == "volcano"


async def test_volcano_rayjob_gives_its_group_back_when_it_finishes(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="volcano") as op:
        # The deadline is checked before the batch scheduling (as upstream's Initializing pass does): it is
        # shortened only once the PodGroup exists, however slow the passes after New are.
        await op.create(rayjob(op.namespace, "done", {}, "HTTPMode", activeDeadlineSeconds=3600,
                               shutdownAfterJobFinishes=True))  # fmt: skip
        await op.wait(lambda: get(op, volcano.PODGROUP, "ray-done-pg"))
        await op.client.patch(RAYJOB, "done", {"spec": {"activeDeadlineSeconds": 1}}, op.namespace)
        await op.wait_status("done", jobDeploymentStatus="Failed", reason="DeadlineExceeded")

        async def emptied() -> dict[str, Any] | None:
            group = await get(op, volcano.PODGROUP, "ray-done-pg")
            return group if group and group["spec"]["minMember"] == 0 else None

        group = await op.wait(emptied)
        assert group["spec"]["minResources"] == {}
        (event,) = await op.wait(lambda: op.events("BatchSchedulerCleanedUp"))
        assert event["type"] == "Normal"
        assert event["message"] == f"Cleaned up batch scheduler resources for RayJob {op.namespace}/done"


async def test_yunikorn_rayjob_task_groups(gang_localkube: Any) -> None:
    labels = {GANG: "true", "yunikorn.apache.org/app-id": "app-j", "yunikorn.apache.org/queue": "root.q"}
    async with operator(gang_localkube, batch_scheduler="yunikorn") as op:
        await op.create(rayjob(op.namespace, "yj", labels, "K8sJobMode"))
        job = await op.wait_status("yj", jobDeploymentStatus="Initializing")

        async def cluster() -> dict[str, Any] | None:
            return await op.cluster(job["status"]["rayClusterName"])

        made = await op.wait(cluster)
        groups = json.loads(made["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
        assert [(g["name"], g["minMember"], g["minResource"]) for g in groups] == [
            ("headgroup", 1, {"cpu": "1", "memory": "2Gi"}),
            ("small", 0, {"cpu": "1", "memory": "1Gi"}),
            ("submittergroup", 1, {"cpu": "500m", "memory": "200Mi"}),
        ]
        assert (made["metadata"]["labels"]["applicationId"], made["metadata"]["labels"]["queue"]) == (
            "app-j",
            "root.q",
        )
        pods = by_group(await pods_of(op, made["metadata"]["name"], 3))
        for group_name, pod in pods.items():
            annotations = pod["metadata"]["annotations"]
            assert annotations["yunikorn.apache.org/task-group-name"] == group_name
            assert json.loads(annotations["yunikorn.apache.org/task-groups"]) == groups
            assert pod["spec"]["schedulerName"] == "yunikorn"
            assert not pod["spec"].get("nodeName")  # YuniKorn does not run here


@pytest.mark.parametrize(("flag", "spec", "message"), [
    ("scheduler-plugins", {"submissionMode": "HTTPMode"}, "currently only RayCluster is supported, got *v1.RayJob"),
    ("kai-scheduler", {"submissionMode": "K8sJobMode"},
     "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is created after RayCluster is ready, "
     "preventing proper gang scheduling"),
    ("volcano", {"submissionMode": "HTTPMode", "clusterSelector": {"ray.io/cluster": "elsewhere"}},
     "gang scheduling does not support RayJob {ns}/refused referencing an existing RayCluster"),
])  # fmt: skip
async def test_rayjobs_a_scheduler_refuses_stay_initializing(
    gang_localkube: Any, flag: str, spec: dict[str, Any], message: str
) -> None:
    async with operator(gang_localkube, batch_scheduler=flag) as op:
        body = rayjob(op.namespace, "refused", {}, "HTTPMode")
        body["spec"].update(spec)
        if "clusterSelector" in spec:
            del body["spec"]["rayClusterSpec"]
        await op.create(body)
        await op.wait_status("refused", jobDeploymentStatus="Initializing")
        with pytest.raises(TemporaryError) as raised:
            await op.reconciler.reconcile(ObjectKey(op.namespace, "refused"))
        assert str(raised.value) == message.format(ns=op.namespace)
        assert (await op.client.list(RAYCLUSTER, op.namespace)).items == []


async def test_kai_http_mode_rayjob(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="kai-scheduler") as op:
        await op.create(rayjob(op.namespace, "kj", {"kai.scheduler/queue": "team-a"}, "HTTPMode"))
        job = await op.wait_status("kj", jobDeploymentStatus="Initializing")
        pods = await pods_of(op, job["status"]["rayClusterName"], 3)
        assert {p["spec"]["schedulerName"] for p in pods} == {"kai-scheduler"}
        assert {p["metadata"]["labels"]["kai.scheduler/queue"] for p in pods} == {"team-a"}


# --- Kubernetes workload-aware scheduling ------------------------------------------------------------------------


async def test_kubernetes_was_workload_and_podgroup(gang_localkube: Any) -> None:
    async with operator(gang_localkube, gates=FeatureGates.parse("KubernetesWAS=true")) as op:
        created = await op.create(raycluster(op.namespace, "w", {GANG: "True"}))
        workload = await op.wait(lambda: get(op, kubernetes_was.WORKLOAD, "w"))
        group = await op.wait(lambda: get(op, kubernetes_was.PODGROUP, "w-cluster"))
        assert workload["spec"]["podGroupTemplates"] == [
            {"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 3}}}
        ]
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        assert workload["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        pods = await pods_of(op, "w", 3)
        assert {p["spec"]["schedulerName"] for p in pods} == {"default-scheduler"}
        # Dropping the gang label deletes both objects.
        await op.client.patch(RAYCLUSTER, "w", {"metadata": {"labels": {GANG: None}}}, op.namespace)

        async def gone() -> bool:
            return (
                await get(op, kubernetes_was.WORKLOAD, "w") is None
                and await get(op, kubernetes_was.PODGROUP, "w-cluster") is None
            )

        await op.wait(gone)


# --- a scheduler whose CRD is not installed -----------------------------------------------------------------------


async def test_a_missing_podgroup_crd_is_reported_once_and_pods_wait(localkube: Any) -> None:
    # The session's localkube has no Volcano CRD and runs no Volcano.
    async with operator(localkube, batch_scheduler="volcano") as op:
        await op.create(raycluster(op.namespace, "rc", {}))
        pods = await pods_of(op, "rc", 3)
        assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
        assert all(not p["spec"].get("nodeName") for p in pods)
        (event,) = await op.wait(lambda: op.events("BatchSchedulerCRDNotInstalled"))
        assert event["type"] == "Warning"
        assert "PodGroup (podgroups.scheduling.volcano.sh/v1beta1)" in event["message"]
        # More reconciles (a scale-up) neither fail nor repeat the Event.
        await op.client.patch(RAYCLUSTER, "rc", {"spec": cluster_spec(3)}, op.namespace)
        await pods_of(op, "rc", 4)
        (event,) = await op.events("BatchSchedulerCRDNotInstalled")
        assert event.get("count", 1) == 1


async def test_volcano_rayjob_suspended_gives_its_group_back(gang_localkube: Any) -> None:
    async with operator(gang_localkube, batch_scheduler="volcano") as op:
        await op.create(rayjob(op.namespace, "sus", {}, "K8sJobMode", shutdownAfterJobFinishes=True))
        await op.wait_status("sus", jobDeploymentStatus="Running")
        await op.client.patch(RAYJOB, "sus", {"spec": {"suspend": True}}, op.namespace)
        await op.wait_status("sus", jobDeploymentStatus="Suspended")
        group = await get(op, volcano.PODGROUP, "ray-sus-pg")
        assert group is not None
        assert (group["spec"]["minMember"], group["spec"]["minResources"]) == (0, {})
        assert await op.wait(lambda: op.events("BatchSchedulerCleanedUp"))
