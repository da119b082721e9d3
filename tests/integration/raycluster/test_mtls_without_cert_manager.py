"""An mTLS RayCluster where cert-manager is not installed (no `cert-manager.io/v1` served), on each backend:
the operator says so in its log once, refuses the cluster with upstream's Warning Event and makes no pod."""

from __future__ import annotations

from pathlib import Path

import yaml

from support.eventually import eventually
from support.operator_process import OperatorProcess

from .conftest import Kube

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ray-cluster.mtls.yaml"


async def test_refused_with_upstreams_message(kube: Kube, operator: OperatorProcess) -> None:
    cluster = await kube.create_cluster(yaml.safe_load(EXAMPLE.read_text()))
    name = cluster["metadata"]["name"]
    message = (
        f"The RayCluster spec is invalid {kube.namespace}/{name}: "
        "tlsOptions requires cert-manager, but cert-manager is not installed"
    )

    async def refused() -> bool:
        return any(
            e["reason"] == "InvalidRayClusterSpec" and e["message"] == message
            for e in await kube.events(name)
        )

    await eventually(refused, 60)
    assert await kube.pods(name) == []
    assert (await kube.cluster(name)).get("status", {}).get("state") is None
    assert "cert-manager API not found; RayClusters with tlsOptions are refused" in operator.log.read_text()
