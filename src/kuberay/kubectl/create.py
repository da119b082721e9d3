"""`kubectl ray create cluster` and `create workergroup`: upstream's checks, writes and messages.

A cluster is written by server-side apply (field manager `ray-kubectl-plugin`) after a GET has shown that
it does not exist yet; `--wait` follows the RayCluster until it is provisioned (condition
`RayClusterProvisioned` True, or state `ready`), printing each new state on a terminal. A worker group is
appended to the cluster's spec and the cluster replaced (PUT), as upstream does, so a concurrent writer
makes it fail with a conflict instead of losing a write.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from kuberay.kubectl import printer
from kuberay.kubectl.generation import ClusterConfig, raycluster, resource_list
from kuberay.kubectl.kube import Kube, PluginError, describe
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.client import PatchType


def _provisioned(cluster: dict[str, Any]) -> bool:
    status = cluster.get("status") or {}
    return status.get("state") == "ready" or any(
        c.get("type") == "RayClusterProvisioned" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def dry_run(config: ClusterConfig, name: str, namespace: str) -> str:
    # Upstream prints the YAML with Printf("%s\n"), hence the blank line at the end.
    return printer.to_yaml(raycluster(config, name, namespace)) + "\n"


async def cluster(kube: Kube, config: ClusterConfig, name: str, namespace: str, *, wait: bool, timeout: float) -> None:  # fmt: skip
    try:
        await kube.client.get(RAYCLUSTER, name, namespace)
    except errors.NotFound as e:
        if not e.details.get("name"):
            raise PluginError(f"failed to create Ray cluster: {describe(e, RAYCLUSTER)}") from e
    except errors.KubeError as e:
        raise PluginError(f"failed to create Ray cluster: {describe(e, RAYCLUSTER)}") from e
    else:
        raise PluginError(f"the Ray cluster {name} in namespace {namespace} already exists")
    try:
        created = await kube.client.patch(
            RAYCLUSTER, name, raycluster(config, name, namespace), namespace, patch_type=PatchType.APPLY
        )
    except errors.KubeError as e:
        raise PluginError(f"failed to create Ray cluster: {describe(e, RAYCLUSTER)}") from e
    print(f"Created Ray cluster: {created['metadata']['name']}", flush=True)
    if wait:
        try:
            await asyncio.wait_for(wait_provisioned(kube, name, namespace), timeout)
        except TimeoutError:
            raise PluginError(
                f"timed out waiting for Ray cluster {name} in namespace {namespace} to be provisioned"
            ) from None
        print(f"Ray cluster {name} is provisioned")


async def wait_provisioned(kube: Kube, name: str, namespace: str) -> None:
    """Returns once the cluster is provisioned; on a terminal, each state it passes through is shown."""
    progress = sys.stderr.isatty()
    shown = ""
    selector = f"metadata.name={name}"
    current = await kube.client.get(RAYCLUSTER, name, namespace)
    version = current["metadata"]["resourceVersion"]
    while True:
        if _provisioned(current):
            return
        state = (current.get("status") or {}).get("state") or "pending"
        if progress and state != shown:
            print(f"Ray cluster {name}: {state}", file=sys.stderr, flush=True)
            shown = state
        try:
            async for event in kube.client.watch(RAYCLUSTER, namespace, resource_version=version, field_selector=selector):  # fmt: skip
                if event["type"] in ("ADDED", "MODIFIED"):
                    current = event["object"]
                    version = current["metadata"]["resourceVersion"]
                    break
                if event["type"] == "DELETED":
                    raise PluginError(f"Ray cluster {name} in namespace {namespace} was deleted")
        except (errors.Gone, errors.Unavailable):
            current = await kube.client.get(RAYCLUSTER, name, namespace)
            version = current["metadata"]["resourceVersion"]


def worker_group_spec(
    name: str, *, image: str, replicas: int, num_of_hosts: int, min_replicas: int, max_replicas: int,
    cpu: str, memory: str, gpu: str, tpu: str, ray_start_params: dict[str, str], node_selectors: dict[str, str],
) -> dict[str, Any]:  # fmt: skip
    """Upstream's new worker group: requests equal to limits, GPU and TPU only when non-zero."""
    resources = resource_list(cpu=cpu, memory=memory, nvidia_gpu=gpu, google_tpu=tpu)
    pod_spec: dict[str, Any] = {
        "containers": [
            {
                "name": "ray-worker",
                "image": image,
                "resources": {"requests": resources, "limits": dict(resources)},
            }
        ]
    }
    if node_selectors:
        pod_spec["nodeSelector"] = dict(node_selectors)
    return {
        "groupName": name,
        "replicas": replicas,
        "numOfHosts": num_of_hosts,
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "rayStartParams": dict(ray_start_params),
        "template": {"spec": pod_spec},
    }


async def workergroup(kube: Kube, cluster_name: str, group: dict[str, Any]) -> None:
    try:
        rc = await kube.client.get(RAYCLUSTER, cluster_name, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"error getting Ray cluster: {describe(e, RAYCLUSTER)}") from e
    rc["spec"].setdefault("workerGroupSpecs", []).append(group)
    try:
        updated = await kube.client.update(RAYCLUSTER, rc)
    except errors.KubeError as e:
        raise PluginError(f"error updating Ray cluster with new worker group: {describe(e)}") from e
    print(
        f"Updated Ray cluster {updated['metadata']['namespace']}/{updated['metadata']['name']} with new worker group"
    )
