"""Drill: the operator reconciles RayClusters exactly while the API server refuses a share of its requests.

A private localkube (simulate mode) runs with `--inject-faults 0.2`: one resource request in five is
answered 429, 500 or (updates and patches) 409 before it is executed. The real operator is started as a
user would start it; RayClusters are created, scaled up and down, and one is deleted. Then the invariant
must hold: exactly the pods each group asks for, every pod and Service owned by a live RayCluster, and
each status agreeing with the pods. The test's own requests retry the injected refusals (they happen
before execution, so a retry is always safe)."""

from __future__ import annotations

import ast
import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from localkube_process import LocalKubeProcess
from operator_process import OperatorProcess

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "faults-drill"
FAULTS = "0.2"
# Workers per cluster when created, then after the scale; None: deleted instead.
PLAN: dict[str, tuple[int, int | None]] = {"a": (1, 3), "b": (2, 0), "c": (3, 1), "d": (2, None), "e": (0, 2)}


class _Retrying(httpx.HTTPTransport):
    """Retries the refusals localkube injects (429, 500, 409 before executing anything); the test's own
    requests meet no real ones (it never creates twice nor writes with a resourceVersion)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for _ in range(30):
            response = super().handle_request(request)
            if response.status_code not in (409, 429, 500):
                return response
            response.close()
        return response


@pytest.fixture
def api(
    localkube_factory: Callable[..., LocalKubeProcess],
) -> Iterator[tuple[LocalKubeProcess, httpx.Client]]:
    server = localkube_factory(extra_args=["--inject-faults", FAULTS])
    token = (server.data_dir / "admin-token").read_text().strip()
    transport = _Retrying(verify=server.ssl_context())
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, transport=transport, timeout=30
    ) as client:
        yield server, client


def _cluster(name: str, workers: int) -> dict[str, Any]:
    cluster: dict[str, Any] = yaml.safe_load((REPO / "examples" / "ray-cluster.minimal.yaml").read_text())
    cluster["metadata"] = {"name": name}
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=0, maxReplicas=5)
    return copy.deepcopy(cluster)


def _items(client: httpx.Client, path: str) -> list[dict[str, Any]]:
    response = client.get(path)
    response.raise_for_status()
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _violations(client: httpx.Client, want: dict[str, int]) -> list[str]:
    """What breaks the invariant now; empty when it holds."""
    clusters = {
        c["metadata"]["name"]: c
        for c in _items(client, f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters")
    }
    pods = [
        p
        for p in _items(client, f"/api/v1/namespaces/{NAMESPACE}/pods")
        if not p["metadata"].get("deletionTimestamp")
    ]
    services = _items(client, f"/api/v1/namespaces/{NAMESPACE}/services")
    found: list[str] = []
    if set(clusters) != set(want):
        found.append(f"clusters {sorted(clusters)} != {sorted(want)}")
    uids = {c["metadata"]["uid"] for c in clusters.values()}
    for obj in pods + services:
        owners = {o["uid"] for o in obj["metadata"].get("ownerReferences") or []}
        if not owners & uids:
            found.append(f"{obj['metadata']['name']} has no live owner")
    for name, workers in want.items():
        mine = [p for p in pods if p["metadata"].get("labels", {}).get("ray.io/cluster") == name]
        heads = [p for p in mine if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
        members = [p for p in mine if p["metadata"]["labels"].get("ray.io/group") == "workers"]
        if len(heads) != 1 or len(members) != workers:
            found.append(f"{name}: {len(heads)} head(s) and {len(members)} worker(s), want 1 and {workers}")
        status = clusters.get(name, {}).get("status") or {}
        agreed = (
            status.get("desiredWorkerReplicas", 0),
            status.get("readyWorkerReplicas", 0),
            status.get("state"),
        )
        if agreed != (workers, workers, "ready"):
            found.append(
                f"{name}: status (desired, ready, state) = {agreed}, want ({workers}, {workers}, ready)"
            )
    return found


def _settle(client: httpx.Client, want: dict[str, int], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    found = _violations(client, want)
    while found and time.monotonic() < deadline:
        time.sleep(1)
        found = _violations(client, want)
    assert not found, found


@pytest.mark.slow
def test_the_operator_reconciles_exactly_while_the_api_server_fails_requests(
    api: tuple[LocalKubeProcess, httpx.Client], tmp_path: Path
) -> None:
    server, client = api
    for crd in sorted((REPO / "deploy" / "crds").glob("*.yaml")):
        created = client.post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=yaml.safe_load(crd.read_text())
        )
        assert created.status_code == 201, created.text
    client.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
    operator_log = tmp_path / "operator.log"
    operator = OperatorProcess(server.kubeconfig, operator_log).start()
    try:
        clusters = f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters"
        for name, (workers, _) in PLAN.items():
            client.post(clusters, json=_cluster(name, workers)).raise_for_status()
        _settle(client, {name: workers for name, (workers, _) in PLAN.items()})

        for name, (_, after) in PLAN.items():
            if after is None:
                client.delete(f"{clusters}/{name}").raise_for_status()
                continue
            patch = {"spec": {"workerGroupSpecs": [{**_cluster(name, after)["spec"]["workerGroupSpecs"][0]}]}}
            client.patch(
                f"{clusters}/{name}", json=patch, headers={"Content-Type": "application/merge-patch+json"}
            ).raise_for_status()
        final = {name: after for name, (_, after) in PLAN.items() if after is not None}
        _settle(client, final)
        # Settled means settled: no late duplicate or deletion shows up afterwards.
        for _ in range(3):
            time.sleep(1)
            assert not _violations(client, final)
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
