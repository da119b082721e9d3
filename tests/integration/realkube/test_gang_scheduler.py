"""A real gang scheduler, on the real control plane: the scheduler-plugins kube-scheduler (its Coscheduling
plugin) schedules the pods of a RayCluster our operator (`kuberay-operator --batch-scheduler
scheduler-plugins`, on the chart's RBAC) gives the PodGroup, the `scheduling.x-k8s.io/pod-group` label and
the schedulerName `scheduler-plugins-scheduler`.

The node is the session's (localkube's agent, simulating its pods). A filler pod of the default scheduler
takes all but one CPU of it, so each pod of the gang (three, one CPU each) would fit on its own and the
three together do not: a scheduler placing pods one by one would bind one; the gang scheduler binds none
and holds all three Pending. Once the filler is deleted the same gang is bound whole.

scheduler-plugins is the gang scheduler the Go module proxy serves here; Volcano (volcano.sh/volcano) and
YuniKorn (github.com/apache/yunikorn-k8shim) were refused, so those keep localkube's gang mode and the
object-level checks of test_batch_schedulers.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from integration.raycluster.conftest import service_account_kubeconfig
from kubesemantics import quantity
from support import runreport, toolbuild
from support.eventually import eventually
from support.operator_process import OperatorProcess
from support.scheduler_plugins import SCHEDULER_NAME, SchedulerPlugins

pytestmark = [pytest.mark.realkube, pytest.mark.timeout(900)]

GANG = "ray.io/gang-scheduling-enabled"
IMAGE = "rayproject/ray:2.52.0"
# The scheduler's queue, its Permit wait (10 s) and backoff on a loaded two-core machine: a bound.
SCHEDULED_TIMEOUT = 180.0


@pytest.fixture(scope="session")
def scheduler_plugins() -> Path:
    """The directory of the real scheduler-plugins build, built on first use; named as its tool in
    tests/support/toolbuild.py, so a cold run starts the build early."""
    home, seconds = toolbuild.ensure("scheduler_plugins")
    runreport.report(f"scheduler-plugins: {home} ready in {seconds:.1f} s (built on first use)")
    return home


@pytest.fixture(scope="module")
def gang_scheduler(
    scheduler_plugins: Path, realkube: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulerPlugins]:
    installed = SchedulerPlugins.install(
        scheduler_plugins, realkube, tmp_path_factory.mktemp("scheduler-plugins")
    )
    try:
        yield installed
    finally:
        installed.uninstall()


@pytest.fixture(scope="module")
def operator(
    gang_scheduler: SchedulerPlugins, realkube: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    directory = tmp_path_factory.mktemp("operator")
    kubeconfig = service_account_kubeconfig(realkube, "kuberay-gang", directory / "kubeconfig")
    process = OperatorProcess(kubeconfig, directory / "operator.log", "--batch-scheduler=scheduler-plugins")
    try:
        yield process.start()
    finally:
        process.stop()


def _container(name: str) -> dict[str, Any]:
    resources = {"cpu": "1", "memory": "1Gi"}
    return {"name": name, "image": IMAGE, "resources": {"requests": resources, "limits": resources}}


def _gang(namespace: str) -> dict[str, Any]:
    template = {"spec": {"containers": [_container("ray-worker")]}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "gang", "namespace": namespace, "labels": {GANG: "true"}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [_container("ray-head")]}}},
            "workerGroupSpecs": [{"groupName": "workers", "replicas": 2, "minReplicas": 2, "maxReplicas": 2,
                                  "rayStartParams": {}, "template": template}],
        },
    }  # fmt: skip


def _free_millicores(admin: Any, node: str) -> int:
    allocatable = admin.get(f"/api/v1/nodes/{node}").json()["status"]["allocatable"]["cpu"]
    pods = admin.get("/api/v1/pods", params={"fieldSelector": f"spec.nodeName={node}"}).json()["items"]
    requested = sum(
        quantity.parse((c.get("resources") or {}).get("requests", {}).get("cpu", "0"))
        for pod in pods
        if pod["status"].get("phase") not in ("Succeeded", "Failed")
        for c in pod["spec"]["containers"]
    )
    return int((quantity.parse(allocatable) - requested) * 1000)


def test_a_gang_that_does_not_fit_stays_pending_whole_and_starts_whole_once_it_fits(
    realkube: Any, gang_scheduler: SchedulerPlugins, operator: OperatorProcess
) -> None:
    namespace = "gang"
    with realkube.client() as admin:
        admin.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
        (node,) = [n["metadata"]["name"] for n in admin.get("/api/v1/nodes").json()["items"]
                   if not n["spec"].get("unschedulable")]  # fmt: skip
        filler_cpu = f"{_free_millicores(admin, node) - 1000}m"
        filler = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "filler"},
                  "spec": {"containers": [{"name": "filler", "image": IMAGE,
                                           "resources": {"requests": {"cpu": filler_cpu}}}]}}  # fmt: skip
        admin.post(f"/api/v1/namespaces/{namespace}/pods", json=filler).raise_for_status()
        eventually(
            lambda: admin.get(f"/api/v1/namespaces/{namespace}/pods/filler").json()["spec"].get("nodeName"),
            SCHEDULED_TIMEOUT, "the filler pod bound by the default scheduler",
        )  # fmt: skip
        try:
            admin.post(
                f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", json=_gang(namespace)
            ).raise_for_status()

            def gang_pods() -> list[dict[str, Any]]:
                gang_scheduler.check_alive()
                listed = admin.get(f"/api/v1/namespaces/{namespace}/pods",
                                   params={"labelSelector": "ray.io/cluster=gang"}).json()["items"]  # fmt: skip
                return list(listed)

            def unschedulable() -> list[dict[str, Any]] | None:
                pods = gang_pods()
                refused = [p for p in pods for c in p["status"].get("conditions") or []
                           if c["type"] == "PodScheduled" and c["status"] == "False"]  # fmt: skip
                return pods if len(pods) == 3 and len(refused) == 3 else None

            held = eventually(
                unschedulable, SCHEDULED_TIMEOUT, "the gang's three pods refused by the gang scheduler"
            )
            assert {p["spec"]["schedulerName"] for p in held} == {SCHEDULER_NAME}
            assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in held} == {"gang"}
            # Refused by the gang scheduler after it tried them: none bound, though each alone would fit.
            assert [p["metadata"]["name"] for p in gang_pods() if p["spec"].get("nodeName")] == []
            group = admin.get(
                f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/gang"
            ).json()
            assert group["spec"]["minMember"] == 3

            admin.delete(f"/api/v1/namespaces/{namespace}/pods/filler", params={"gracePeriodSeconds": "0"})
            bound = eventually(
                lambda: (pods := gang_pods()) and len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods)
                and pods, SCHEDULED_TIMEOUT, "the gang's three pods bound once the filler is gone",
            )  # fmt: skip
            assert {p["spec"]["nodeName"] for p in bound} == {node}
            scheduled = eventually(
                lambda: (g := admin.get(f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/gang")
                         .json()).get("status", {}).get("phase") in ("Scheduled", "Running") and g,
                SCHEDULED_TIMEOUT, "the PodGroup Scheduled by its controller",
            )  # fmt: skip
            assert scheduled["status"]["phase"] in ("Scheduled", "Running")
        finally:
            admin.delete(f"/api/v1/namespaces/{namespace}")
