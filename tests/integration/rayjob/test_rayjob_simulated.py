"""The RayJob controller on each backend (`kube_backend`: localkube, or realkube with localkube's node) in
simulate mode (no Ray): clusters, submitters, suspension, deadlines, the bounded Initializing, retries, deletion
policies and rules, finalizer, managedBy, metrics."""

from __future__ import annotations

import asyncio

import pytest

from integration.rayjob.harness import cluster_spec, operator, rayjob
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime.resources import JOB, SERVICE

# Slow: its TTLs and deadlines run out in real time (~75 s per control plane).
# Marked so, it starts early, and its waiting overlaps the files that keep the cores busy.
pytestmark = [pytest.mark.slow, pytest.mark.timers]

NEVER_READY = {"localkube.io/simulate": "NeverReady"}


async def test_a_rayjob_makes_its_cluster_submitter_job_and_head_service(kube_backend):
    async with operator(kube_backend) as op:
        await op.create(rayjob(op.namespace))
        job = await op.wait_status(jobDeploymentStatus="Running")
        status, ns = job["status"], op.namespace
        assert "ray.io/rayjob-finalizer" in job["metadata"]["finalizers"]
        assert status["dashboardURL"] == f"{status['rayClusterName']}-head-svc.{ns}.svc.cluster.local:8265"
        cluster = await op.cluster(status["rayClusterName"])
        labels = cluster["metadata"]["labels"]
        assert (labels["ray.io/originated-from-cr-name"], labels["ray.io/originated-from-crd"]) == (
            "job",
            "RayJob",
        )
        assert labels["ray.io/job-submission-mode"] == "K8sJobMode"
        (owner,) = cluster["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("RayJob", job["metadata"]["uid"], True)
        submitter = await op.wait(lambda: op.get(JOB, "job"))
        assert submitter["spec"]["backoffLimit"] == 2
        env = {
            e["name"]: e.get("value") for e in submitter["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        assert env["RAY_JOB_SUBMISSION_ID"] == status["jobId"]
        assert env["RAY_DASHBOARD_ADDRESS"] == status["dashboardURL"]
        service = await op.wait(lambda: op.get(SERVICE, "job-head-svc"))
        assert service["spec"]["selector"]["ray.io/cluster"] == status["rayClusterName"]
        assert await op.events("CreatedRayCluster") and await op.events("CreatedRayJobSubmitter")
        # events.k8s.io/v1 Events reported by upstream's rayjob-controller (read here in their core/v1 form).
        assert {e["reportingComponent"] for e in await op.events("CreatedRayCluster")} == {
            "rayjob-controller"
        }


async def test_suspend_creates_nothing_until_resumed_and_suspending_releases_the_cluster(kube_backend):
    async with operator(kube_backend) as op:
        await op.create(
            rayjob(op.namespace, submissionMode="HTTPMode", suspend=True, shutdownAfterJobFinishes=True)
        )
        await op.wait_status(jobDeploymentStatus="Suspended")
        assert (await op.client.list(RAYCLUSTER, op.namespace)).items == []
        await op.client.patch(RAYJOB, "job", {"spec": {"suspend": False}}, op.namespace)
        running = await op.wait_status(jobDeploymentStatus="Running")
        name = running["status"]["rayClusterName"]
        assert await op.cluster(name) is not None
        await op.client.patch(RAYJOB, "job", {"spec": {"suspend": True}}, op.namespace)
        suspended = await op.wait_status(jobDeploymentStatus="Suspended")
        assert "rayClusterName" not in suspended["status"] and "jobId" not in suspended["status"]
        assert await op.cluster(name) is None
        assert await op.events("DeletedRayCluster")


async def test_active_deadline_fails_the_job_and_shutdown_deletes_its_cluster_after_the_ttl(kube_backend):
    async with operator(kube_backend) as op:
        spec = cluster_spec(head_annotations=NEVER_READY)
        # The deadline is checked before the cluster is made (as upstream does), so a deadline that passes before
        # then leaves no cluster to delete: it is shortened only once the cluster exists, however slow the
        # first passes are.
        await op.create(rayjob(op.namespace, cluster=spec, activeDeadlineSeconds=3600, backoffLimit=2,
                               shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=1))  # fmt: skip
        initializing = await op.wait_status(jobDeploymentStatus="Initializing")
        name = initializing["status"]["rayClusterName"]
        await op.wait(lambda: op.cluster(name))
        await op.client.patch(RAYJOB, "job", {"spec": {"activeDeadlineSeconds": 1}}, op.namespace)
        job = await op.wait_status(jobDeploymentStatus="Failed", reason="DeadlineExceeded")
        assert job["status"]["failed"] == 1 and job["status"]["endTime"]  # deadlines are never retried
        assert job["status"]["message"].startswith(
            "The RayJob has passed the activeDeadlineSeconds. StartTime: "
        )
        assert job["status"]["rayClusterName"] == name
        await op.wait(lambda: _gone(op, name))
        assert await op.events("DeletedRayCluster")
        assert await op.rayjob() is not None  # only the cluster goes
        samples = {
            (s.name, s.labels.get("job_deployment_status") or s.labels.get("deployment_status"))
            for family in op.registry.collect()
            for s in family.samples
            if s.labels.get("name") == "job"
        }
        assert ("kuberay_job_execution_duration_seconds", "Failed") in samples
        assert ("kuberay_job_deployment_status", "Failed") in samples


@pytest.mark.parametrize(("fault", "attempts"), [("ImagePullBackOff", 2), ("CrashLoopBackOff", 1)])
async def test_a_head_that_cannot_start_fails_the_attempt_after_the_start_timeout(
    kube_backend, fault, attempts
):
    # Past localkube's 2 s of ErrImagePull, so that the head shows the fault's own reason when time is up.
    async with operator(kube_backend, environ={"RAYJOB_CLUSTER_START_TIMEOUT_SECONDS": "4"}) as op:
        spec = cluster_spec(head_annotations={"localkube.io/simulate": fault})
        await op.create(
            rayjob(op.namespace, cluster=spec, backoffLimit=attempts - 1, submissionMode="HTTPMode")
        )
        job = await op.wait_status(jobDeploymentStatus="Failed", failed=attempts, timeout=90)
        status = job["status"]
        assert status["reason"] == "ClusterStartFailed"
        assert "did not start within 4s" in status["message"] and fault in status["message"]
        created = {e["message"] for e in await op.events("CreatedRayCluster")}
        assert len(created) == attempts  # every attempt gets its own cluster


async def test_deletion_rules_suspend_workers_then_delete_the_cluster_then_the_rayjob(kube_backend):
    # The job fails because its head cannot start, which the operator can only see once the cluster exists:
    # an activeDeadlineSeconds of 1 failed it before the cluster was made whenever the passes after New took
    # over a second (as upstream, the deadline is checked first), and no rule then had a cluster to act on.
    # Once a later rule is due the earlier ones are skipped (as upstream does); the 20 s gap leaves the
    # operator time to carry out the suspension, and the test to see it, on a loaded machine.
    rules = [
        {"policy": "DeleteWorkers", "condition": {"jobDeploymentStatus": "Failed", "ttlSeconds": 0}},
        {"policy": "DeleteCluster", "condition": {"jobDeploymentStatus": "Failed", "ttlSeconds": 20}},
        {"policy": "DeleteSelf", "condition": {"jobDeploymentStatus": "Failed", "ttlSeconds": 25}},
    ]
    async with operator(kube_backend, environ={"RAYJOB_CLUSTER_START_TIMEOUT_SECONDS": "1"}) as op:
        spec = cluster_spec(head_annotations={"localkube.io/simulate": "CrashLoopBackOff"}, workers=0)
        await op.create(rayjob(op.namespace, cluster=spec, submissionMode="HTTPMode",
                               deletionStrategy={"deletionRules": rules}))  # fmt: skip
        job = await op.wait_status(jobDeploymentStatus="Failed", timeout=90)
        assert job["status"]["reason"] == "ClusterStartFailed"
        name = job["status"]["rayClusterName"]

        async def workers_suspended() -> bool:
            cluster = await op.cluster(name)
            return cluster is not None and cluster["spec"]["workerGroupSpecs"][0].get("suspend") is True

        await op.wait(workers_suspended)
        await op.wait(lambda: _gone(op, name))
        assert await op.rayjob() is not None
        await op.wait(lambda: _absent(op.rayjob()))
        assert await op.events("UpdatedRayCluster")


async def test_cluster_selector_uses_an_existing_cluster_and_never_deletes_it(kube_backend):
    async with operator(kube_backend) as op:
        missing = rayjob(
            op.namespace, "lost", clusterSelector={"ray.io/cluster": "nope"}, submissionMode="HTTPMode"
        )
        await op.create(missing)
        await op.create({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                         "metadata": {"name": "shared", "namespace": op.namespace}, "spec": cluster_spec()})  # fmt: skip
        await op.create(rayjob(op.namespace, clusterSelector={"ray.io/cluster": "shared"}, submissionMode="HTTPMode",
                               activeDeadlineSeconds=5, shutdownAfterJobFinishes=True))  # fmt: skip
        job = await op.wait_status(jobDeploymentStatus="Running")
        assert job["status"]["rayClusterName"] == "shared"
        assert job["status"]["dashboardURL"] == f"shared-head-svc.{op.namespace}.svc.cluster.local:8265"
        await op.wait_status(jobDeploymentStatus="Failed", reason="DeadlineExceeded", timeout=30)
        await asyncio.sleep(4)  # past the shutdown TTL of 0 and at least one requeue
        assert await op.cluster("shared") is not None
        assert [e["message"] for e in await op.events("RayClusterNotFound")] == [
            f"RayCluster {op.namespace}/nope set in the clusterSelector is not found. It must be created manually"
        ]


async def test_deleting_a_rayjob_releases_its_finalizer_and_managed_by_kueue_is_left_alone(kube_backend):
    async with operator(kube_backend) as op:
        await op.create(rayjob(op.namespace, "kueued", managedBy="kueue.x-k8s.io/multikueue"))
        await op.create(rayjob(op.namespace, submissionMode="HTTPMode"))
        await op.wait_status(jobDeploymentStatus="Running")
        await op.client.delete(RAYJOB, "job", op.namespace)
        await op.wait(lambda: _absent(op.rayjob()))
        kueued = await op.rayjob("kueued")
        assert not kueued.get("status") and not kueued["metadata"].get("finalizers")


async def _gone(op, cluster_name: str) -> bool:
    return await op.cluster(cluster_name) is None


async def _absent(coroutine) -> bool:
    return await coroutine is None
