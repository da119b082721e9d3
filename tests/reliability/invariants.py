"""The invariant every fault drill ends with, and the objects the drills make.

`violations(client, namespace, want)` lists what breaks the invariant for RayClusters named in `want`
(name -> worker count): exactly one head and `want[name]` workers of the group `workers` (pods being
deleted are not counted), every pod and Service owned by a live RayCluster (no orphans), no cluster
beyond `want`, and each status agreeing with the pods (desired = ready = the count, state ready).
`settle` waits until the list is empty, then checks that it stays empty: settled means settled, no late
duplicate or deletion shows up afterwards.

`Retrying` is a transport for the test's own requests against a localkube that refuses a share of them on
purpose (`--inject-faults`): the refusals happen before execution, so a retry is always safe.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import yaml

from support.eventually import eventually, holds

REPO = Path(__file__).resolve().parents[2]
CRDS = sorted((REPO / "deploy" / "crds").glob("*.yaml"))
GROUP = "workers"


class Retrying(httpx.HTTPTransport):
    """Retries the refusals localkube injects (429, 500, 409 before executing anything); the test's own
    requests meet no real ones (it never creates twice nor writes with a resourceVersion)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for _ in range(30):
            response = super().handle_request(request)
            if response.status_code not in (409, 429, 500):
                return response
            response.close()
        return response


def cluster(name: str, workers: int, max_workers: int = 5) -> dict[str, Any]:
    """examples/ray-cluster.minimal.yaml named `name` with `workers` workers of a tenth of a CPU each (many
    fit on the simulated node)."""
    raycluster: dict[str, Any] = yaml.safe_load((REPO / "examples" / "ray-cluster.minimal.yaml").read_text())
    raycluster["metadata"] = {"name": name}
    group = raycluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=0, maxReplicas=max_workers)
    group["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return copy.deepcopy(raycluster)


def clusters_path(namespace: str) -> str:
    return f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters"


def scale(client: httpx.Client, namespace: str, name: str, workers: int, max_workers: int = 5) -> None:
    """Sets the worker count of `name` with a merge patch, as `kubectl patch --type merge` would."""
    group = cluster(name, workers, max_workers)["spec"]["workerGroupSpecs"][0]
    client.patch(
        f"{clusters_path(namespace)}/{name}",
        json={"spec": {"workerGroupSpecs": [group]}},
        headers={"Content-Type": "application/merge-patch+json"},
    ).raise_for_status()


def start_scale_up(client: httpx.Client, namespace: str, name: str, count: int) -> str:
    """Creates RayCluster `name` without workers, waits until it is ready, asks for `count` workers and
    returns once a part of them (not nearly all) exist: the moment a drill strikes. Returns the cluster's
    resourceVersion at creation, older than anything the scale-up writes."""
    created = client.post(clusters_path(namespace), json=cluster(name, 0, count))
    created.raise_for_status()
    settle(client, namespace, {name: 0})
    scale(client, namespace, name, count, count)
    eventually(lambda: 5 < len(workers(client, namespace, name)) < count - 10, 60, f"the scale-up of {name}")
    version: str = created.json()["metadata"]["resourceVersion"]
    return version


def items(client: httpx.Client, path: str) -> list[dict[str, Any]]:
    response = client.get(path)
    response.raise_for_status()
    found: list[dict[str, Any]] = response.json()["items"]
    return found


def workers(client: httpx.Client, namespace: str, name: str) -> list[dict[str, Any]]:
    """The live (not terminating) worker pods of cluster `name`."""
    return [
        p
        for p in items(client, f"/api/v1/namespaces/{namespace}/pods?labelSelector=ray.io/cluster={name}")
        if p["metadata"]["labels"].get("ray.io/group") == GROUP and not p["metadata"].get("deletionTimestamp")
    ]


def violations(client: httpx.Client, namespace: str, want: dict[str, int]) -> list[str]:
    """What breaks the invariant now; empty when it holds."""
    clusters = {c["metadata"]["name"]: c for c in items(client, clusters_path(namespace))}
    pods = [
        p
        for p in items(client, f"/api/v1/namespaces/{namespace}/pods")
        if not p["metadata"].get("deletionTimestamp")
    ]
    services = items(client, f"/api/v1/namespaces/{namespace}/services")
    found: list[str] = []
    if set(clusters) != set(want):
        found.append(f"clusters {sorted(clusters)} != {sorted(want)}")
    uids = {c["metadata"]["uid"] for c in clusters.values()}
    for obj in pods + services:
        owners = {o["uid"] for o in obj["metadata"].get("ownerReferences") or []}
        if not owners & uids:
            found.append(f"{obj['metadata']['name']} has no live owner")
    for name, count in want.items():
        mine = [p for p in pods if p["metadata"].get("labels", {}).get("ray.io/cluster") == name]
        heads = [p for p in mine if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
        members = [p for p in mine if p["metadata"]["labels"].get("ray.io/group") == GROUP]
        if len(heads) != 1 or len(members) != count:
            found.append(f"{name}: {len(heads)} head(s) and {len(members)} worker(s), want 1 and {count}")
        status = clusters.get(name, {}).get("status") or {}
        agreed = (
            status.get("desiredWorkerReplicas", 0),
            status.get("readyWorkerReplicas", 0),
            status.get("state"),
        )
        if agreed != (count, count, "ready"):
            found.append(f"{name}: status (desired, ready, state) = {agreed}, want ({count}, {count}, ready)")
    return found


def settle(client: httpx.Client, namespace: str, want: dict[str, int], timeout: float = 240) -> None:
    """Waits until the invariant holds, then checks that it still holds a few seconds later."""

    def kept() -> bool:
        return not violations(client, namespace, want)

    def found() -> str:
        return f"the invariant (violations now: {violations(client, namespace, want)})"

    eventually(kept, timeout, found, every=1)
    holds(kept, 3, found)


def deleted_workers(client: httpx.Client, namespace: str) -> list[str]:
    """The operator's Events saying it deleted a worker pod: after a pure scale-up any is a duplicate it made
    and then took back."""
    return [
        e["message"]
        for e in items(client, f"/api/v1/namespaces/{namespace}/events")
        if e.get("reason") == "DeletedWorkerPod"
    ]
