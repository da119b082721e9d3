"""Node Label Delivery needs the operator's webhooks (kuberay#5300's reconciler check): with the gate on but
ENABLE_WEBHOOKS unset, a RayCluster with labelMappings is refused with a Warning Event and gets no pod, since
no label could reach it. (With the webhooks: test_node_label_delivery.py.)"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.eventually import eventually
from support.operator_process import OperatorProcess

from .conftest import Kube, service_account_kubeconfig
from .test_lifecycle import small_cluster


@pytest.fixture(scope="module")
def operator(kube_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    log_dir = os.environ.get("RAYCLUSTER_TEST_LOG_DIR")
    directory = Path(log_dir) if log_dir else tmp_path_factory.mktemp("operator")
    kubeconfig = service_account_kubeconfig(kube_backend, "kuberay-system", directory / "kubeconfig")
    gates = "--feature-gates=TopologyLabelDelivery=true"
    process = OperatorProcess(kubeconfig, directory / "operator.log", gates, "--allowed-node-labels=example.com/rack").start()  # fmt: skip
    try:
        yield process
    finally:
        process.stop()


async def test_refused_without_webhooks(kube: Kube) -> None:
    manifest = small_cluster("nowebhooks", replicas=1)
    manifest["spec"]["workerGroupSpecs"][0]["labelMappings"] = [{"nodeLabel": "example.com/rack"}]
    await kube.create_cluster(manifest)
    message = (
        f"The RayCluster spec is invalid {kube.namespace}/nowebhooks: labelMappings requires the operator to run "
        "with webhooks (ENABLE_WEBHOOKS=true)"
    )

    async def refused() -> bool:
        return any(e["reason"] == "InvalidRayClusterSpec" and e["message"] == message for e in await kube.events("nowebhooks"))  # fmt: skip

    await eventually(refused, 60, "the refusal's Event")
    assert await kube.pods("nowebhooks") == []
