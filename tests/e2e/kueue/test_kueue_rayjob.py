"""RayJobs and RayClusters queued by the real Kueue (tests/support/kueue.py, v0.17.0) on each control plane
(`kube_backend`: a private localkube, or the session's realkube with localkube's node; the directory's
conftest.py), run by our operator, as Kueue's own KubeRay tests hold KubeRay to (test/e2e/singlecluster/
kuberay_test.go; the RayJob tests of test/integration/singlecluster/controller/jobs/rayjob):

- a RayJob labelled `kueue.x-k8s.io/queue-name` is created suspended (Kueue's mutating webhook), gets a
  Workload, is admitted and unsuspended by Kueue, and only then has its RayCluster made; the queue labels
  Kueue puts in the templates reach its pods; it ends SUCCEEDED and its Workload Finished;
- with a ClusterQueue whose CPU quota fits one such job, a second RayJob waits suspended, with its
  Workload not admitted, while the first runs, and starts once the first is done and its quota free;
- preemption by a WorkloadPriorityClass: a higher-priority RayJob has Kueue suspend a running one, whose
  cluster our operator deletes and whose status it resets; it is admitted again later, on a new cluster;
- a ResourceFlavor's nodeLabels and tolerations, injected by Kueue at admission, reach the pods;
- a RayCluster with the label is created suspended, admitted and made ready; a second waits suspended;
- a RayJob without the label is neither suspended nor given a Workload.

The jobs run on one real Ray head per backend (the directory's `ray_head`), as in
tests/e2e/rayjob/test_rayjob_ray.py: the node simulates the head pod at the address that head's dashboard
listens on (127.0.0.1 on localkube; on realkube this machine's non-loopback address, which its EndpointSlices
and its service proxy accept), and the operator (in this process) submits in HTTPMode through the API
server's service proxy. Kueue counts the head template's requests, which the simulated pod does not need to
hold. Each test's namespace is deleted at its end, and Kueue uninstalled from realkube after the last.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from integration.rayjob.harness import Operator, cluster_spec, operator
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.resources import NAMESPACE, NODE, POD, Resource
from support.kueue import PRIORITY_LABEL, QUEUE_LABEL
from support.localkube_process import LocalKubeProcess
from support.ray_process import RayHead

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

KUEUE = "kueue.x-k8s.io/v1beta2"
RESOURCE_FLAVOR = Resource(KUEUE, "ResourceFlavor", "resourceflavors", namespaced=False)
CLUSTER_QUEUE = Resource(KUEUE, "ClusterQueue", "clusterqueues", namespaced=False)
LOCAL_QUEUE = Resource(KUEUE, "LocalQueue", "localqueues")
WORKLOAD = Resource(KUEUE, "Workload", "workloads")
WORKLOAD_PRIORITY_CLASS = Resource(
    KUEUE, "WorkloadPriorityClass", "workloadpriorityclasses", namespaced=False
)
# The labels Kueue puts in an admitted job's pod templates (pkg/constants: ClusterQueueLabel, LocalQueueLabel).
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"
LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/local-queue-name"
# A Ray job through its cluster on a loaded two-core machine: a bound, not a measurement.
RUN_TIMEOUT = 180.0


@contextlib.asynccontextmanager
async def kueue_operator(server: LocalKubeProcess, **config: Any) -> AsyncIterator[Operator]:
    """The operator in this process on a namespace of its own (harness.operator); at the end that namespace is
    deleted, and gone, while the operator and Kueue still run (the RayJobs' finalizer is the operator's, the
    Workloads' Kueue's): the session's realkube is shared with the tests after these."""
    async with operator(server, **config) as op:
        try:
            yield op
        finally:
            await op.client.delete(NAMESPACE, op.namespace)

            async def gone() -> bool:
                try:
                    await op.client.get(NAMESPACE, op.namespace)
                except errors.NotFoundError:
                    return True
                return False

            await op.wait(gone, timeout=120)


async def queues(
    op: Operator, cpu: str, preemption: dict[str, Any] | None = None, flavor: dict[str, Any] | None = None
) -> tuple[str, str]:
    """A ResourceFlavor (`flavor` its spec), a ClusterQueue with `cpu` of quota in it (and `preemption`) and a
    LocalQueue `queue` in the test's namespace; the ClusterQueue's and the LocalQueue's names."""
    suffix = op.namespace
    flavor_name, cluster_queue = f"flavor-{suffix}", f"cq-{suffix}"
    await op.client.create(RESOURCE_FLAVOR, {"apiVersion": KUEUE, "kind": "ResourceFlavor",
                                             "metadata": {"name": flavor_name}, "spec": flavor or {}})  # fmt: skip
    quotas = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": "8Gi"}]
    await op.client.create(CLUSTER_QUEUE, {
        "apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": cluster_queue},
        "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": op.namespace}},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                                     "flavors": [{"name": flavor_name, "resources": quotas}]}],
                 **({"preemption": preemption} if preemption else {})},
    })  # fmt: skip
    await op.client.create(LOCAL_QUEUE, {"apiVersion": KUEUE, "kind": "LocalQueue",
                                         "metadata": {"name": "queue", "namespace": op.namespace},
                                         "spec": {"clusterQueue": cluster_queue}})  # fmt: skip

    async def active() -> bool:
        found = await op.client.get(LOCAL_QUEUE, "queue", op.namespace)
        conditions = (found.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Active" and c["status"] == "True" for c in conditions)

    await op.wait(active, timeout=60)
    return cluster_queue, "queue"


def queued_rayjob(
    namespace: str, name: str, ray_head: RayHead, entrypoint: str, cpu: str = "1", queue: str = "queue"
) -> dict[str, Any]:
    """A RayJob in HTTPMode on the test's Ray head, in `queue`, its head asking for `cpu`; no workers."""
    head = {
        "metadata": {"annotations": {"localkube.io/pod-ip": ray_head.dashboard_host}},
        "spec": {"containers": [{
            "name": "ray-head", "image": "rayproject/ray:2.52.0",
            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}},
            "ports": [{"name": "dashboard", "containerPort": ray_head.dashboard_port}],
        }]},
    }  # fmt: skip
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "submissionMode": "HTTPMode",
            "entrypoint": entrypoint,
            "shutdownAfterJobFinishes": True,  # Kueue's webhook refuses a queued RayJob without it
            "rayClusterSpec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"rayStartParams": {}, "template": head},
                "workerGroupSpecs": [],
            },
        },
    }


async def workload_of(op: Operator, job: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload Kueue made for the RayJob (owned by it)."""
    uid = job["metadata"]["uid"]
    listed = await op.client.list(WORKLOAD, op.namespace)
    owned = [
        w
        for w in listed.items
        if any(r.get("uid") == uid for r in w["metadata"].get("ownerReferences") or [])
    ]
    return owned[0] if owned else None


def condition(obj: dict[str, Any] | None, kind: str) -> str | None:
    for found in ((obj or {}).get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return str(found["status"])
    return None


def python(code: str) -> str:
    """An entrypoint running this interpreter (which has Ray; `python` on the head's PATH need not)."""
    return f"{sys.executable} -c '{code}'"


async def test_a_queued_rayjob_is_created_suspended_admitted_and_succeeds(
    kube_backend: LocalKubeProcess, ray_head: RayHead
) -> None:
    async with kueue_operator(kube_backend, use_kubernetes_proxy=True) as op:
        cluster_queue, local_queue = await queues(op, cpu="2")
        created = await op.create(queued_rayjob(op.namespace, "queued", ray_head, python("print(6 * 7)")))
        assert created["spec"]["suspend"] is True  # Kueue's webhook, on the create itself

        async def admitted() -> dict[str, Any] | None:
            workload = await workload_of(op, created)
            return workload if condition(workload, "Admitted") == "True" else None

        workload = await op.wait(admitted, timeout=60)
        (pod_set,) = workload["spec"]["podSets"]
        assert pod_set["count"] == 1
        assert workload["status"]["admission"]["clusterQueue"] == cluster_queue

        done = await op.wait_status("queued", jobDeploymentStatus="Complete", timeout=RUN_TIMEOUT)
        assert done["status"]["jobStatus"] == "SUCCEEDED"
        assert not done["spec"].get("suspend")  # Kueue unsuspended it (false, which Go omits)
        assert done["status"]["rayClusterName"]
        template = done["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
        labels = template["metadata"]["labels"]
        assert (labels[CLUSTER_QUEUE_LABEL], labels[LOCAL_QUEUE_LABEL]) == (cluster_queue, local_queue)

        async def finished() -> bool:
            return condition(await workload_of(op, created), "Finished") == "True"

        await op.wait(finished, timeout=60)


async def test_a_second_rayjob_waits_suspended_for_the_quota_and_runs_once_it_is_free(
    kube_backend: LocalKubeProcess, ray_head: RayHead
) -> None:
    async with kueue_operator(kube_backend, use_kubernetes_proxy=True) as op:
        await queues(op, cpu="1")  # one head of 1 CPU at a time
        first = await op.create(
            queued_rayjob(op.namespace, "first", ray_head, python("import time; time.sleep(15)"))
        )
        running = await op.wait_status("first", jobStatus="RUNNING", timeout=RUN_TIMEOUT)
        assert not running["spec"].get("suspend")
        # Its pods carry the queue labels Kueue put in the templates it admitted (as Kueue's e2e checks).
        name = running["status"]["rayClusterName"]
        pods = await op.client.list(POD, op.namespace, label_selector=f"ray.io/cluster={name}")
        assert pods.items
        assert {p["metadata"]["labels"].get(LOCAL_QUEUE_LABEL) for p in pods.items} == {"queue"}
        second = await op.create(queued_rayjob(op.namespace, "second", ray_head, python("print(2)")))

        async def pending() -> dict[str, Any] | None:
            workload = await workload_of(op, second)
            return workload if condition(workload, "QuotaReserved") == "False" else None

        waiting = await op.wait(pending, timeout=60)
        assert condition(waiting, "Admitted") != "True"
        held = await op.rayjob("second")
        assert held is not None and held["spec"]["suspend"] is True
        assert held["status"]["jobDeploymentStatus"] == "Suspended"
        # Nothing of it runs while it waits: no RayCluster, no pod of its.
        assert not (held.get("status") or {}).get("rayClusterName")
        still = await op.rayjob("first")
        assert still is not None and still["status"]["jobDeploymentStatus"] == "Running"

        first_done = await op.wait_status("first", jobDeploymentStatus="Complete", timeout=RUN_TIMEOUT)
        assert first_done["status"]["jobStatus"] == "SUCCEEDED"
        second_done = await op.wait_status("second", jobDeploymentStatus="Complete", timeout=RUN_TIMEOUT)
        assert second_done["status"]["jobStatus"] == "SUCCEEDED"
        # It started only once the first had finished: its Workload was admitted after the first's finished.
        first_finished = _transition(await workload_of(op, first), "Finished")
        second_admitted = _transition(await workload_of(op, second), "Admitted")
        assert first_finished <= second_admitted


def _transition(obj: dict[str, Any] | None, kind: str) -> str:
    for found in ((obj or {}).get("status") or {}).get("conditions") or []:
        if found["type"] == kind and found["status"] == "True":
            return str(found["lastTransitionTime"])
    raise AssertionError(f"no {kind} condition in {obj}")


async def test_a_higher_priority_rayjob_preempts_a_running_one_which_resumes_and_completes_later(
    kube_backend: LocalKubeProcess, ray_head: RayHead
) -> None:
    """Kueue's "Should preempt lower priority rayJobs when resource insufficient": the low one is suspended
    by Kueue (its Workload evicted); our operator deletes its cluster and resets its status, as upstream's
    Suspending state does; once the high one is done, the low one is admitted again and runs on a new cluster."""
    async with kueue_operator(kube_backend, use_kubernetes_proxy=True) as op:
        low, high = f"low-{op.namespace}", f"high-{op.namespace}"
        for name, value in ((low, 100), (high, 1000)):
            await op.client.create(WORKLOAD_PRIORITY_CLASS, {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
                                                             "metadata": {"name": name}, "value": value})  # fmt: skip
        await queues(op, cpu="1", preemption={"withinClusterQueue": "LowerPriority"})
        body = queued_rayjob(op.namespace, "low", ray_head, python("import time; time.sleep(20)"))
        body["metadata"]["labels"][PRIORITY_LABEL] = low
        first = await op.create(body)
        running = await op.wait_status("low", jobStatus="RUNNING", timeout=RUN_TIMEOUT)
        preempted_cluster = running["status"]["rayClusterName"]

        body = queued_rayjob(op.namespace, "high", ray_head, python("print(1)"))
        body["metadata"]["labels"][PRIORITY_LABEL] = high
        await op.create(body)

        suspended = await op.wait_status("low", jobDeploymentStatus="Suspended", timeout=60)
        assert suspended["spec"]["suspend"] is True  # Kueue's eviction
        status = suspended["status"]
        assert not {"rayClusterName", "jobId", "jobStatus"} & {k for k, v in status.items() if v}, status
        evicted = await workload_of(op, first)
        assert condition(evicted, "Evicted") == "True" or condition(evicted, "Admitted") != "True"

        async def cluster_gone() -> bool:
            return await op.cluster(preempted_cluster) is None

        await op.wait(cluster_gone, timeout=60)

        done = await op.wait_status("high", jobDeploymentStatus="Complete", timeout=RUN_TIMEOUT)
        assert done["status"]["jobStatus"] == "SUCCEEDED"
        resumed = await op.wait_status("low", jobDeploymentStatus="Complete", timeout=RUN_TIMEOUT)
        assert resumed["status"]["jobStatus"] == "SUCCEEDED"
        assert resumed["status"]["rayClusterName"] != preempted_cluster  # a cluster made again on resume


async def test_a_flavors_node_labels_and_tolerations_reach_the_pods(
    kube_backend: LocalKubeProcess, ray_head: RayHead
) -> None:
    """Kueue injects the admitting ResourceFlavor's nodeLabels (as a nodeSelector) and tolerations into the
    RayJob's pod templates when it unsuspends it; the pods our operator makes carry them and are scheduled on
    the node that has the label."""
    async with kueue_operator(kube_backend, use_kubernetes_proxy=True) as op:
        label = f"kueue-e2e.example.com/{op.namespace}"
        (node,) = (await op.client.list(NODE)).items
        await op.client.patch(NODE, node["metadata"]["name"], {"metadata": {"labels": {label: "on-demand"}}})
        try:
            toleration = {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}
            flavor = {"nodeLabels": {label: "on-demand"}, "tolerations": [toleration]}
            await queues(op, cpu="2", flavor=flavor)
            await op.create(
                queued_rayjob(op.namespace, "placed", ray_head, python("import time; time.sleep(10)"))
            )
            running = await op.wait_status("placed", jobStatus="RUNNING", timeout=RUN_TIMEOUT)
            head = running["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
            assert head["nodeSelector"] == {label: "on-demand"}
            assert toleration in head["tolerations"]
            name = running["status"]["rayClusterName"]
            (pod,) = (await op.client.list(POD, op.namespace, label_selector=f"ray.io/cluster={name}")).items
            assert pod["spec"]["nodeSelector"] == {label: "on-demand"}
            assert toleration in pod["spec"]["tolerations"]
            assert pod["spec"]["nodeName"] == node["metadata"]["name"]
            done = await op.wait_status("placed", jobDeploymentStatus="Complete", timeout=RUN_TIMEOUT)
            assert done["status"]["jobStatus"] == "SUCCEEDED"
        finally:  # the session's realkube node is the later tests' too
            await op.client.patch(NODE, node["metadata"]["name"], {"metadata": {"labels": {label: None}}})


def queued_raycluster(namespace: str, name: str) -> dict[str, Any]:
    """A RayCluster in `queue`: a head and one worker, each asking for 1 CPU."""
    spec = cluster_spec(workers=1)
    for group in (spec["headGroupSpec"], *spec["workerGroupSpecs"]):
        (container,) = group["template"]["spec"]["containers"]
        container["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    spec["workerGroupSpecs"][0]["maxReplicas"] = 1
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: "queue"}},
            "spec": spec}  # fmt: skip


async def test_queued_rayclusters_are_created_suspended_and_admitted_as_the_quota_allows(
    kube_backend: LocalKubeProcess,
) -> None:
    """Kueue's "Should run a RayCluster if admitted": suspended by the webhook on create, then admitted and
    made ready, its pods in the queue; a second one, for which the quota has no room, stays suspended (our
    operator's `suspended` state, no pods) until the first is deleted."""
    async with kueue_operator(kube_backend) as op:
        cluster_queue, _ = await queues(op, cpu="2")
        created = await op.create(queued_raycluster(op.namespace, "queued"))
        assert created["spec"]["suspend"] is True

        async def in_state(name: str, state: str) -> dict[str, Any] | None:
            found = await op.cluster(name)
            return found if (found or {}).get("status", {}).get("state") == state else None

        cluster = await op.wait(lambda: in_state("queued", "ready"), timeout=RUN_TIMEOUT)
        assert not cluster["spec"].get("suspend")
        workload = await workload_of(op, created)
        assert workload is not None and condition(workload, "Admitted") == "True"
        assert workload["status"]["admission"]["clusterQueue"] == cluster_queue
        pods = (await op.client.list(POD, op.namespace, label_selector="ray.io/cluster=queued")).items
        assert len(pods) == 2
        assert {p["metadata"]["labels"].get(LOCAL_QUEUE_LABEL) for p in pods} == {"queue"}

        waiting = await op.create(queued_raycluster(op.namespace, "waiting"))
        held = await op.wait(lambda: in_state("waiting", "suspended"), timeout=60)
        assert held["spec"]["suspend"] is True
        pending = await workload_of(op, waiting)
        assert condition(pending, "QuotaReserved") != "True"
        assert not (await op.client.list(POD, op.namespace, label_selector="ray.io/cluster=waiting")).items

        await op.client.delete(RAYCLUSTER, "queued", op.namespace)
        await op.wait(lambda: in_state("waiting", "ready"), timeout=RUN_TIMEOUT)


async def test_a_rayjob_without_a_queue_is_left_alone(
    kube_backend: LocalKubeProcess, ray_head: RayHead
) -> None:
    """Kueue's "Should reconcile jobs only when queue is set" (manageJobsWithoutQueueName is off): not
    suspended on create, no Workload, run by our operator as without Kueue."""
    async with kueue_operator(kube_backend, use_kubernetes_proxy=True) as op:
        body = queued_rayjob(op.namespace, "unqueued", ray_head, python("print(3)"))
        del body["metadata"]["labels"][QUEUE_LABEL]
        created = await op.create(body)
        assert not created["spec"].get("suspend")
        done = await op.wait_status("unqueued", jobDeploymentStatus="Complete", timeout=RUN_TIMEOUT)
        assert done["status"]["jobStatus"] == "SUCCEEDED"
        assert await workload_of(op, created) is None
