"""The real `kuberay-operator` with `--watch-namespace` naming many namespaces: the cache watches every kind
in each of them (one long-lived request per kind and namespace, as controller-runtime's multi-namespace
cache does), and the operator's writes still go through. With the HTTP client's default pool of 100
connections, twenty namespaces' watches took every connection and each write waited for one until it
timed out: no Service or Pod was ever made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.resources import POD, SERVICE
from support.eventually import eventually
from support.operator_process import OperatorProcess

from ..raycluster.test_lifecycle import small_cluster
from ..runtime.kube import client_for, new_namespace

NAMESPACES = 20


async def test_a_cluster_in_the_last_of_twenty_watched_namespaces_gets_its_service_and_pods(
    localkube: Any, tmp_path: Path
) -> None:
    client = client_for(localkube)
    names = [await new_namespace(client) for _ in range(NAMESPACES)]
    operator = OperatorProcess(
        localkube.kubeconfig, tmp_path / "operator.log", f"--watch-namespace={','.join(names)}"
    ).start()
    try:
        await client.create(RAYCLUSTER, small_cluster("far", replicas=1), names[-1])

        async def made() -> bool:
            return len((await client.list(POD, names[-1])).items) >= 2

        await eventually(
            made, 60, lambda: f"the far cluster's pods:\n{operator.log.read_text()[-3000:]}", every=0.2
        )
        assert await client.get(SERVICE, "far-head-svc", names[-1])
    finally:
        operator.stop()
        await client.close()
