"""RayJob passes through the fake API server (`fakekube`) and the poller on a fake dashboard: what each
pass writes, in milliseconds. The same flows against localkube and real time are in
tests/integration/rayjob."""

from __future__ import annotations

from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime.resources import JOB, SERVICE
from unit.controllers.rayjob.fakedashboard import running
from unit.controllers.rayjob.world import World, rayjob


async def test_a_job_gets_its_cluster_and_submitter_runs_completes_and_its_cluster_goes() -> None:
    world = World()
    world.kube.put(RAYJOB, rayjob(shutdownAfterJobFinishes=True))
    async with running(world.poller):
        await world.reconcile()
        status = world.status()
        assert status["jobDeploymentStatus"] == "Initializing"
        assert "ray.io/rayjob-finalizer" in world.job()["metadata"]["finalizers"]
        name, job_id = status["rayClusterName"], status["jobId"]
        await world.reconcile()
        cluster = world.kube.objects(RAYCLUSTER)[name]
        assert cluster["metadata"]["ownerReferences"][0]["uid"] == world.job()["metadata"]["uid"]
        assert world.kube.objects(JOB) == {}  # no submitter before the cluster is ready

        world.bring_up(name)
        await world.reconcile()
        assert world.status()["jobDeploymentStatus"] == "Running"
        assert world.status()["dashboardURL"] == f"{name}-head-svc.ns.svc.cluster.local:8265"
        submitter = world.kube.objects(JOB)["job"]
        env = {
            e["name"]: e.get("value") for e in submitter["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        assert env["RAY_JOB_SUBMISSION_ID"] == job_id
        await world.reconcile()
        assert world.kube.objects(SERVICE)["job-head-svc"]["spec"]["selector"]["ray.io/cluster"] == name

        world.dashboard.jobs[job_id] = "RUNNING"  # the submitter submitted it
        await world.polled()
        await world.reconcile()
        await world.polled()
        await world.reconcile()
        assert world.status()["jobStatus"] == "RUNNING"

        world.dashboard.jobs[job_id] = "SUCCEEDED"
        world.finish_submitter()
        await world.reconcile()
        await world.polled()
        await world.reconcile()
        assert world.status()["jobDeploymentStatus"] == "Complete"
        assert world.status()["jobStatus"] == "SUCCEEDED" and world.status()["succeeded"] == 1
        assert world.status()["endTime"]
        await world.reconcile()
    assert world.kube.objects(RAYCLUSTER) == {}
    assert {"CreatedRayCluster", "CreatedRayJobSubmitter", "DeletedRayCluster"} <= set(world.events.reasons())


async def test_a_suspended_job_makes_nothing_until_resumed_and_suspending_again_releases_its_cluster() -> (
    None
):
    world = World()
    world.kube.put(RAYJOB, rayjob(suspend=True, shutdownAfterJobFinishes=True))
    seen = []
    for _ in range(4):
        await world.reconcile()
        seen.append(world.status()["jobDeploymentStatus"])
    assert seen == ["Initializing", "Suspending", "Suspended", "Suspended"]  # upstream's way from New
    assert not [w for w in world.kube.writes if w[1] == "rayclusters"]

    job = world.job()
    job["spec"]["suspend"] = False
    world.kube.put(RAYJOB, job)
    for _ in range(3):  # Suspended -> New -> Initializing, then the cluster
        await world.reconcile()
    name = world.status()["rayClusterName"]
    assert world.status()["jobDeploymentStatus"] == "Initializing" and name in world.kube.objects(RAYCLUSTER)

    job = world.job()
    job["spec"]["suspend"] = True
    world.kube.put(RAYJOB, job)
    seen = []
    for _ in range(4):
        await world.reconcile()
        seen.append(world.status()["jobDeploymentStatus"])
    assert seen == ["Suspending", "Suspending", "Suspended", "Suspended"]  # the cluster deleted, then gone
    assert "rayClusterName" not in world.status() and "jobId" not in world.status()
    assert world.kube.objects(RAYCLUSTER) == {}
    assert "DeletedRayCluster" in world.events.reasons()


async def test_a_deleted_job_waits_for_its_finalizer_then_goes() -> None:
    world = World()
    world.kube.put(RAYJOB, rayjob())
    await world.reconcile()
    await world.kube.delete(RAYJOB, "job", "ns")
    assert world.job()["metadata"]["deletionTimestamp"]  # held by the finalizer
    await world.reconcile()
    assert "job" not in world.kube.objects(RAYJOB)
