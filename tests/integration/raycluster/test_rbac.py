"""With localkube's RBAC enforced, the operator running as deploy/rbac's ServiceAccount (bound to its
ClusterRole) reconciles a RayCluster that uses every owned kind, scales, and is deleted through its GCS FT
finalizer, without a single 403.

This module starts its own operator (no other operator runs while it does) watching only its namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kuberay.rayresources import RAYCLUSTER
from support.eventually import eventually
from support.operator_process import OperatorProcess

from ..runtime.kube import client_for, new_namespace
from .conftest import Kube, load_sample
from .conftest import service_account_kubeconfig as conftest_service_account_kubeconfig
from .test_lifecycle import WORKER, small_cluster, wait_ready_with


@pytest.fixture
async def namespace(kube_backend: Any) -> str:
    client = client_for(kube_backend)
    try:
        return await new_namespace(client)
    finally:
        await client.close()


@pytest.fixture
def service_account_kubeconfig(kube_backend: Any, namespace: str, tmp_path: Path) -> Path:
    return conftest_service_account_kubeconfig(kube_backend, namespace, tmp_path / "kubeconfig")


async def test_operator_as_its_service_account_is_never_forbidden(
    kube_backend: Any, namespace: str, service_account_kubeconfig: Path, tmp_path: Path
) -> None:
    log = tmp_path / "operator-sa.log"
    flags = (
        "--enable-leader-election=true",
        f"--leader-election-namespace={namespace}",
        f"--watch-namespace={namespace}",
    )
    operator = OperatorProcess(service_account_kubeconfig, log, *flags).start()
    client = client_for(kube_backend)
    try:
        kube = Kube(client, namespace)
        # Autoscaler RBAC, token auth Secret, serve Service, Ingress, NetworkPolicies, GCS FT finalizer:
        cluster = small_cluster(
            "least",
            replicas=2,
            enableInTreeAutoscaling=True,
            authOptions={"mode": "token"},
            networkPolicy={"mode": "DenyAll"},
            gcsFaultToleranceOptions={"redisAddress": "redis:6379"},
        )
        cluster["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
        head = cluster["spec"]["headGroupSpec"]
        head["enableIngress"] = True
        head["template"]["spec"]["containers"][0]["ports"] = [{"name": "serve", "containerPort": 8000}]
        await kube.create_cluster(cluster)
        await wait_ready_with(kube, "least", 2)
        (sample,) = load_sample("ray-cluster.sample.yaml")
        await kube.create_cluster(sample)
        await kube.patch_cluster(
            "least",
            {"spec": {"workerGroupSpecs": [{**cluster["spec"]["workerGroupSpecs"][0], "replicas": 1}]}},
        )

        async def settled() -> bool:
            state = (await kube.cluster(sample["metadata"]["name"])).get("status", {}).get("state")
            return (
                state == "ready" and len(await kube.live_pods("least", **WORKER)) == 2
            )  # autoscaler decides

        await eventually(settled)
        await kube.client.delete(RAYCLUSTER, "least", kube.namespace)

        async def deleted() -> bool:
            remaining = (await kube.client.list(RAYCLUSTER, kube.namespace)).items
            return "least" not in {c["metadata"]["name"] for c in remaining}

        await eventually(deleted)
    finally:
        operator.stop()
        await client.close()
    output = log.read_text()
    assert "forbidden" not in output.lower()
    assert "successfully acquired lease" in output
