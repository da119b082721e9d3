"""Drill: the operator reconciles RayClusters exactly while the API server refuses a share of its requests.

A private localkube (simulate mode) runs with `--inject-faults 0.2`: one resource request in five is
answered 429, 500 or (updates and patches) 409 before it is executed. The real operator is started as a
user would start it; RayClusters are created, scaled up and down, and one is deleted. Then the invariant
must hold: exactly the pods each group asks for, every pod and Service owned by a live RayCluster, and
each status agreeing with the pods. The test's own requests retry the injected refusals (they happen
before execution, so a retry is always safe)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from reliability import invariants
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

pytestmark = pytest.mark.timers

NAMESPACE = "faults-drill"
FAULTS = "0.2"
# Workers per cluster when created, then after the scale; None: deleted instead.
PLAN: dict[str, tuple[int, int | None]] = {"a": (1, 3), "b": (2, 0), "c": (3, 1), "d": (2, None), "e": (0, 2)}


@pytest.fixture
def api(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> Iterator[tuple[LocalKubeProcess, httpx.Client]]:
    server = localkube_factory(extra_args=["--inject-faults", FAULTS])
    token = (server.data_dir / "admin-token").read_text().strip()
    transport = invariants.Retrying(verify=server.ssl_context())
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, transport=transport, timeout=30
    ) as client:
        yield server, client


@pytest.mark.slow
def test_the_operator_reconciles_exactly_while_the_api_server_fails_requests(
    api: tuple[LocalKubeProcess, httpx.Client], tmp_path: Path
) -> None:
    server, client = api
    for crd in invariants.CRDS:
        created = client.post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=yaml.safe_load(crd.read_text())
        )
        assert created.status_code == 201, created.text
    client.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
    operator_log = tmp_path / "operator.log"
    operator = OperatorProcess(server.kubeconfig, operator_log).start()
    try:
        clusters = invariants.clusters_path(NAMESPACE)
        for name, (workers, _) in PLAN.items():
            client.post(clusters, json=invariants.cluster(name, workers)).raise_for_status()
        invariants.settle(client, NAMESPACE, {name: workers for name, (workers, _) in PLAN.items()})

        for name, (_, after) in PLAN.items():
            if after is None:
                client.delete(f"{clusters}/{name}").raise_for_status()
                continue
            invariants.scale(client, NAMESPACE, name, after)
        final = {name: after for name, (_, after) in PLAN.items() if after is not None}
        invariants.settle(client, NAMESPACE, final)
    finally:
        operator.stop()
        server.stop()
    injected = [
        line
        for line in (server.data_dir / "localkube.log").read_text().splitlines()
        if "injected faults" in line
    ]
    assert injected, "localkube reported no injected faults"
    counts = ast.literal_eval(injected[-1].split("status code: ", 1)[1])
    assert counts.get(429, 0) > 0 and counts.get(500, 0) > 0, counts
