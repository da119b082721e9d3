"""Every RayCluster in the upstream samples reaches `ready` with the pods and services it asks for.

All samples are created at once, each in its own namespace, with the supporting objects they ship
(ConfigMaps, Secrets, ServiceAccounts, PVCs, Roles). The rest (Deployments and StatefulSets of external
Redis and the like, Volcano Queues, cluster-wide RBAC, Ingresses) are left out: a RayCluster never waits for them.

Two kinds of sample need help from the test, as they would on a real cluster:
- node selectors for TPU or GPU node pools (`cloud.google.com/gke-tpu-topology: 4x4`, ...): the test labels
  the simulated node with the sample's selector values before creating it and waits until its pods are
  bound, then the next such sample relabels the node (a bound pod stays where it is); the node is also
  given the CPUs and memory of the largest pool (64 TPU hosts);
- mTLS (`tlsOptions`) requires cert-manager, which localkube does not run: the operator refuses it with
  upstream's Event and makes no pods.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kuberay.runtime.client import Client
from kuberay.runtime.resources import NODE, SERVICE_ACCOUNT, Resource
from support.eventually import eventually

from ..runtime.kube import client_for, new_namespace
from .conftest import SAMPLES, Kube, load_sample

# realkube runs no volume provisioner: a claim stays Pending, and kube-scheduler leaves the head unscheduled
# ("pod has unbound immediate PersistentVolumeClaims"); localkube's node binds claims itself.
SUPPORTING_KINDS = {
    "ConfigMap": Resource("v1", "ConfigMap", "configmaps"),
    "Secret": Resource("v1", "Secret", "secrets"),
    "ServiceAccount": Resource("v1", "ServiceAccount", "serviceaccounts"),
    "PersistentVolumeClaim": Resource("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    "Role": Resource("rbac.authorization.k8s.io/v1", "Role", "roles"),
    "RoleBinding": Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
}
NEEDS_CERT_MANAGER = {"ray-cluster.mtls.yaml"}
INT32_MAX = 2**31 - 1
NODE_POOL = {"cpu": "4k", "memory": "16Ti"}  # room for the 256-chip TPU sample: 64 hosts of 24 CPUs, 200G


def sample_files() -> list[str]:
    return sorted(
        p.name
        for p in SAMPLES.glob("ray-cluster*.yaml")
        if any(d["kind"] == "RayCluster" for d in load_sample(p.name))
    )


def the_cluster(sample: str) -> dict[str, Any]:
    (cluster,) = [d for d in load_sample(sample) if d["kind"] == "RayCluster"]
    return cluster


def expected_pods(cluster: dict[str, Any]) -> int:
    """1 head + each group's replicas clamped to [min, max], times its hosts (suspended groups: none)."""
    total = 1
    for group in cluster["spec"].get("workerGroupSpecs") or ():
        if group.get("suspend"):
            continue
        low, high = group.get("minReplicas", 0), group.get("maxReplicas", INT32_MAX)
        total += min(max(group.get("replicas", low), low), high) * group.get("numOfHosts", 1)
    return total


def expected_services(cluster: dict[str, Any]) -> set[str]:
    name, spec = cluster["metadata"]["name"], cluster["spec"]
    head_service = (spec["headGroupSpec"].get("headService") or {}).get("metadata", {}).get("name")
    services = {head_service or f"{name}-head-svc"}
    if (cluster["metadata"].get("annotations") or {}).get("ray.io/enable-serve-service") == "true":
        services.add(f"{name}-serve-svc")
    if any(g.get("numOfHosts", 1) > 1 for g in spec.get("workerGroupSpecs") or ()):
        services.add(f"{name}-headless")
    return services


def node_selectors(cluster: dict[str, Any]) -> dict[str, str]:
    spec = cluster["spec"]
    templates = [
        spec["headGroupSpec"]["template"],
        *(g["template"] for g in spec.get("workerGroupSpecs") or ()),
    ]
    return {
        k: str(v) for t in templates for k, v in ((t.get("spec") or {}).get("nodeSelector") or {}).items()
    }


async def create_sample(client: Client, sample: str) -> Kube:
    kube = Kube(client, await new_namespace(client))
    docs = load_sample(sample)
    for doc in docs:
        resource = SUPPORTING_KINDS.get(doc["kind"])
        if resource is not None:
            doc["metadata"]["namespace"] = kube.namespace
            await client.create(resource, doc)
    cluster = the_cluster(sample)
    # A sample may name a ServiceAccount it expects the user to have made (ray-cluster.gke-bucket.yaml's
    # Workload Identity account): a real API server refuses its pods until it exists (ServiceAccount admission).
    for account in service_accounts(cluster) - {
        d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"
    }:
        await client.create(SERVICE_ACCOUNT, {"metadata": {"name": account, "namespace": kube.namespace}})
    await kube.create_cluster(cluster)
    return kube


def service_accounts(cluster: dict[str, Any]) -> set[str]:
    spec = cluster["spec"]
    groups = [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]
    names = {group["template"].get("spec", {}).get("serviceAccountName") for group in groups}
    return {name for name in names if name and name != "default"}


async def pods_bound(kube: Kube, cluster: dict[str, Any]) -> None:
    name = cluster["metadata"]["name"]

    async def bound() -> bool:
        pods = await kube.pods(name)
        return len(pods) == expected_pods(cluster) and all(p["spec"].get("nodeName") for p in pods)

    try:
        await eventually(bound, 60)
    except AssertionError:
        pods = await kube.pods(name)
        raise AssertionError(f"{name}: {[(p['metadata']['name'], p['status']) for p in pods]}") from None


@pytest.fixture(scope="module")
async def created(kube_backend: Any, operator: Any) -> AsyncIterator[dict[str, Kube]]:
    client = client_for(kube_backend)
    kubes: dict[str, Kube] = {}
    try:
        kubes = await create_all(client)
        yield kubes
    finally:
        for kube in kubes.values():
            await kube.delete_clusters()
        await client.close()


async def create_all(client: Client) -> dict[str, Kube]:
    """Node-selecting samples first, one at a time (each relabels the node), then the rest at once."""
    kubes: dict[str, Kube] = {}
    samples = sample_files()
    selective = [s for s in samples if node_selectors(the_cluster(s))]
    (node,) = (await client.list(NODE)).items
    # The 256-chip TPU sample asks for a node pool; here, one large node.
    capacity = {**node["status"]["allocatable"], **NODE_POOL}
    patch = {"status": {"capacity": capacity, "allocatable": capacity}}
    await client.patch(NODE, node["metadata"]["name"], patch, subresource="status")
    for sample in selective:
        cluster = the_cluster(sample)
        await client.patch(NODE, node["metadata"]["name"], {"metadata": {"labels": node_selectors(cluster)}})
        kubes[sample] = await create_sample(client, sample)
        await pods_bound(kubes[sample], cluster)
    rest = [s for s in samples if s not in selective]
    kubes.update(zip(rest, await asyncio.gather(*(create_sample(client, s) for s in rest)), strict=True))
    return kubes


def test_every_raycluster_sample_is_covered() -> None:
    assert len(sample_files()) >= 40  # the samples directory is where this module thinks it is
    assert Path(SAMPLES / "ray-cluster.sample.yaml").exists()


@pytest.mark.parametrize(
    "sample",
    sample_files(),
)
async def test_sample_reaches_ready(created: dict[str, Kube], sample: str) -> None:
    kube, cluster = created[sample], the_cluster(sample)
    name = cluster["metadata"]["name"]
    if sample in NEEDS_CERT_MANAGER:

        async def refused() -> bool:
            return any(
                e["reason"] == "InvalidRayClusterSpec"
                and e["message"]
                == f"The RayCluster spec is invalid {kube.namespace}/{name}: tlsOptions requires cert-manager, but cert-manager is not installed"
                for e in await kube.events(name)
            )

        await eventually(refused, 30)
        assert await kube.pods(name) == []
        return

    async def ready() -> bool:
        return (await kube.cluster(name)).get("status", {}).get("state") == "ready"

    # A bound: on kube-apiserver a pod with a claim waits for the volume binder and the scheduler's retry.
    await eventually(ready, 150)
    pods = await kube.pods(name)
    assert len(pods) == expected_pods(cluster)
    assert sum(p["metadata"]["labels"]["ray.io/node-type"] == "head" for p in pods) == 1
    assert {s["metadata"]["name"] for s in await kube.services(name)} == expected_services(cluster)
    status = (await kube.cluster(name))["status"]
    assert status.get("desiredWorkerReplicas", 0) == expected_pods(cluster) - 1
    assert status.get("readyWorkerReplicas", 0) == expected_pods(cluster) - 1
