"""The operator as a process: a kill -9 in the middle of a 100-worker scale-up, the least-privilege
ServiceAccount of deploy/rbac, managedBy, the NetworkPolicy controller and the §7 metrics."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from prometheus_client.parser import text_string_to_metric_families

from kuberay.runtime.resources import NETWORK_POLICY, Resource
from support.eventually import eventually
from support.operator_process import OperatorProcess

from .conftest import Kube
from .test_lifecycle import WORKER, small_cluster, wait_ready_with

RBAC = Path(__file__).resolve().parents[3] / "deploy" / "rbac"
CLUSTER_ROLE = Resource("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDING = Resource(
    "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)


async def test_operator_killed_mid_scale_up_ends_with_exactly_100_workers(
    kube: Kube, operator: OperatorProcess, tmp_path: Path
) -> None:
    await kube.create_cluster(small_cluster("big", replicas=0))
    await wait_ready_with(kube, "big", 0)
    # The scale-up runs under a throttled operator (20 requests/s), so it is surely half done when killed.
    operator.kill()
    slow = OperatorProcess(operator.kubeconfig, tmp_path / "slow.log", "--qps=20", "--burst=1").start()
    most_seen = 0

    async def count() -> int:
        nonlocal most_seen
        found = len(await kube.pods("big", **WORKER))
        most_seen = max(most_seen, found)
        return found

    group = {**small_cluster("big")["spec"]["workerGroupSpecs"][0], "replicas": 100}
    await kube.patch_cluster("big", {"spec": {"workerGroupSpecs": [group]}})

    async def partly_scaled() -> bool:
        return 10 < await count() < 90

    try:
        await eventually(partly_scaled)
    finally:
        slow.kill()
    operator.start()

    async def all_ready() -> bool:
        await count()
        return (await kube.cluster("big")).get("status", {}).get("readyWorkerReplicas") == 100

    await eventually(all_ready, 120)
    pods = await kube.pods("big", **WORKER)
    # The last count can come just before the last pods (the status read after it already counts them).
    most_seen = max(most_seen, len(pods))
    assert len(pods) == 100
    assert most_seen == 100
    assert not [p for p in pods if p["metadata"].get("deletionTimestamp")]
    assert not [e for e in await kube.events("big") if e["reason"] == "DeletedWorkerPod"]


async def test_managed_by_another_controller_is_left_alone(kube: Kube) -> None:
    cluster = small_cluster("elsewhere", managedBy="kueue.x-k8s.io/multikueue")
    await kube.create_cluster(cluster)
    await kube.create_cluster(small_cluster("here", replicas=0))
    await wait_ready_with(kube, "here", 0)  # the operator has had its chance with both
    assert await kube.pods("elsewhere") == []
    assert "status" not in await kube.cluster("elsewhere")


async def test_network_policies_follow_the_spec(kube: Kube) -> None:
    cluster = small_cluster("fenced", replicas=1, networkPolicy={"mode": "DenyAllIngress"})
    await kube.create_cluster(cluster)

    async def policies() -> set[str]:
        return {p["metadata"]["name"] for p in (await kube.client.list(NETWORK_POLICY, kube.namespace)).items}

    async def made() -> bool:
        return await policies() == {"fenced-head", "fenced-workers-small"}

    await eventually(made)
    await kube.patch_cluster("fenced", {"spec": {"networkPolicy": None}})

    async def removed() -> bool:
        return await policies() == set()

    await eventually(removed)


async def test_metrics(kube: Kube, operator: OperatorProcess) -> None:
    await kube.create_cluster(small_cluster("measured", replicas=1))
    await wait_ready_with(kube, "measured", 1)
    uid = (await kube.cluster("measured"))["metadata"]["uid"]

    async def exposed() -> bool:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5
        ) as response:
            text = response.read().decode()
        labels = f'name="measured",namespace="{kube.namespace}"'
        return (
            f'kuberay_cluster_info{{{labels},owner_kind="None",uid="{uid}"}} 1.0' in text
            and f'kuberay_cluster_condition_provisioned{{condition="true",{labels},uid="{uid}"}} 1.0' in text
            and f'kuberay_cluster_provisioned_duration_seconds{{{labels},uid="{uid}"}}' in text
        )

    await eventually(exposed)


async def test_status_is_written_only_when_it_changes(kube: Kube, operator: OperatorProcess) -> None:
    await kube.create_cluster(small_cluster("still", replicas=1))
    await wait_ready_with(kube, "still", 1)
    before = (await kube.cluster("still"))["status"]

    def reconciles() -> float:
        url = f"http://127.0.0.1:{operator.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            lines = response.read().decode().splitlines()
        prefix = 'controller_runtime_reconcile_total{controller="raycluster"'
        return sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(prefix))

    counted = reconciles()
    await kube.patch_cluster("still", {"metadata": {"labels": {"poke": "1"}}})  # a label change wakes it

    async def reconciled_again() -> bool:
        return reconciles() > counted

    await eventually(reconciled_again)
    assert (await kube.cluster("still"))["status"] == before  # nothing changed, nothing written


async def test_metrics_measure_the_operators_api_traffic_under_upstreams_controller_names(
    kube: Kube, operator: OperatorProcess
) -> None:
    """After the operator built a cluster: client-go's rest_client_* families hold samples of that work
    (pods created by POST, labelled with the API server's host), and the controllers are labelled by kind."""
    await kube.create_cluster(small_cluster("counted", replicas=1))
    await wait_ready_with(kube, "counted", 1)
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5) as response:
        families = {f.name: f for f in text_string_to_metric_families(response.read().decode())}
    server = yaml.safe_load(operator.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    host = urlsplit(server).netloc

    def value(family: str, sample: str, **labels: str) -> float:
        return sum(
            s.value
            for s in families[family].samples
            if s.name == sample and labels.items() <= s.labels.items()
        )

    assert (
        value("rest_client_requests", "rest_client_requests_total", code="201", method="POST", host=host) >= 3
    )
    for family in ("rest_client_request_duration_seconds", "rest_client_rate_limiter_duration_seconds"):
        assert value(family, f"{family}_count", verb="POST", host=host) >= 3, family
        assert value(family, f"{family}_count", verb="GET", host=host) >= 1, family
    sent = "rest_client_request_size_bytes"
    assert value(sent, f"{sent}_count", verb="POST", host=host) >= 3
    assert value(sent, f"{sent}_sum", verb="POST", host=host) > 0  # pod bodies are not empty
    received = "rest_client_response_size_bytes"
    assert value(received, f"{received}_sum", verb="POST", host=host) > 0
    assert families["rest_client_request_retries"].type == "counter"  # registered, as upstream does
    controllers = {
        s.labels["controller"] for s in families["controller_runtime_max_concurrent_reconciles"].samples
    }
    assert {"raycluster", "rayjob"} <= controllers
    assert (
        value("controller_runtime_reconcile", "controller_runtime_reconcile_total", controller="raycluster")
        > 0
    )


async def test_a_failing_reconcile_step_is_named_in_the_log(kube: Kube, operator: OperatorProcess) -> None:
    # The API server refuses the head pod (its name is not a DNS subdomain), so the "pods" step fails.
    cluster = small_cluster("misnamed", replicas=0)
    cluster["spec"]["headGroupSpec"]["template"]["metadata"] = {"name": "Not_A_Pod_Name"}
    await kube.create_cluster(cluster)

    async def reported() -> bool:
        lines = [json.loads(line) for line in operator.log.read_text().splitlines() if line.startswith("{")]
        return any(
            line.get("name") == "misnamed"
            and line["msg"].startswith('Reconciler error: reconcile step "pods" failed: FailedCreateHeadPod')
            for line in lines
        )

    await eventually(reported)
