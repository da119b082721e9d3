"""`kubectl ray get node|workergroup|token`: upstream's queries, columns and not-found messages (`get cluster`,
`get job` and `get service` are `kuberay.kubectl.listing`'s).

Nodes are the pods labelled
`ray.io/is-ray-node=yes` (and `ray.io/cluster`); a worker group's replicas count its worker pods that are
Running and Ready, and its resources are one pod's (each container's requests, a limit where no request)
times the group's replicas, zero for a suspended group. Quantities print in Go's canonical form.
"""

from __future__ import annotations

import base64
from typing import Any

from kuberay.kubectl import printer
from kuberay.kubectl.generation import GOOGLE_TPU, NVIDIA_GPU
from kuberay.kubectl.kube import Kube, PluginError, describe
from kuberay.kubectl.listing import canonical, scope
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.resources import POD, SECRET
from kubesemantics import quantity

MAX_INT32 = 2147483647


def _labels(**selectors: str | None) -> str:
    keys = {"node_type": "ray.io/node-type", "group": "ray.io/group", "cluster": "ray.io/cluster",
            "is_ray_node": "ray.io/is-ray-node"}  # fmt: skip
    return ",".join(f"{keys[k]}={v}" for k, v in selectors.items() if v)


def _not_found(
    kind: str, name: str, cluster: str | None, namespace: str, all_namespaces: bool
) -> PluginError:
    where = f" in Ray cluster {cluster}" if cluster else " in any Ray cluster"
    return PluginError(f"Ray {kind} {name} not found{scope(namespace, all_namespaces)}{where}")


async def nodes(kube: Kube, name: str | None, cluster: str | None, all_namespaces: bool) -> str:
    namespace = None if all_namespaces else kube.namespace
    try:
        pods = await kube.client.list_all(
            POD,
            namespace,
            label_selector=_labels(is_ray_node="yes", cluster=cluster),
            field_selector=f"metadata.name={name}" if name else None,
        )
    except errors.KubeError as e:
        raise PluginError(f"unable to get Ray nodes: {describe(e)}") from e
    if name and not pods.items:
        raise _not_found("node", name, cluster, kube.namespace, all_namespaces)
    headers = (["Namespace"] if all_namespaces else []) + [
        "Name", "CPUs", "GPUs", "TPUs", "Memory", "Cluster", "Type", "Worker Group", "Age"]  # fmt: skip
    rows = []
    for pod in pods.items:
        labels = pod["metadata"].get("labels") or {}
        containers = pod["spec"].get("containers") or [{}]
        requests = (containers[0].get("resources") or {}).get("requests") or {}
        rows.append(
            ([pod["metadata"].get("namespace", "")] if all_namespaces else [])
            + [
                pod["metadata"]["name"],
                canonical(requests.get("cpu")),
                canonical(requests.get(NVIDIA_GPU)),
                canonical(requests.get(GOOGLE_TPU)),
                canonical(requests.get("memory")),
                labels.get("ray.io/cluster", ""),
                labels.get("ray.io/node-type", ""),
                labels.get("ray.io/group", ""),
                printer.age(pod),
            ]
        )
    return printer.table(headers, rows)


def group_resources(group: dict[str, Any]) -> dict[str, str]:
    """One pod's resources (requests, else limits, summed over containers) times the group's replicas."""
    replicas = int(group.get("replicas") or 0)
    if group.get("suspend") or replicas == 0:
        return {}
    pod: dict[str, quantity.Amount] = {}
    for container in ((group.get("template") or {}).get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        quantity.add(pod, {**(resources.get("limits") or {}), **(resources.get("requests") or {})})
    return {name: amount.text() for name, amount in quantity.add({}, pod, replicas).items()}


def _running_and_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


async def workergroups(kube: Kube, name: str | None, cluster: str | None, all_namespaces: bool) -> str:
    namespace = None if all_namespaces else kube.namespace
    try:
        found = (
            await kube.client.list_all(
                RAYCLUSTER, namespace, field_selector=f"metadata.name={cluster}" if cluster else None
            )
        ).items
    except errors.KubeError as e:
        what = f"get Ray cluster {cluster}" if cluster else "list Ray clusters"
        raise PluginError(f"unable to {what} in namespace {kube.namespace}: {describe(e, RAYCLUSTER)}") from e
    groups = [
        (rc, group)
        for rc in found
        for group in rc["spec"].get("workerGroupSpecs") or []
        if not name or group.get("groupName") == name
    ]
    if name and not groups:
        raise _not_found("worker group", name, cluster, kube.namespace, all_namespaces)
    headers = (["Namespace"] if all_namespaces else []) + [
        "Name", "Min", "Max", "Replicas", "CPUs", "GPUs", "TPUs", "Memory", "Cluster"]  # fmt: skip
    rows = []
    for rc, group in groups:
        rc_name, rc_namespace = rc["metadata"]["name"], rc["metadata"].get("namespace", "")
        selector = _labels(node_type="worker", group=group["groupName"], cluster=rc_name)
        try:
            pods = await kube.client.list_all(POD, rc_namespace, label_selector=selector)
        except errors.KubeError as e:
            raise PluginError(describe(e)) from e
        ready = sum(1 for pod in pods.items if _running_and_ready(pod))
        resources = group_resources(group)
        rows.append(
            ([rc_namespace] if all_namespaces else [])
            + [
                group["groupName"],
                group.get("minReplicas", 0),
                group.get("maxReplicas", MAX_INT32),
                f"{ready}/{group.get('replicas', 0)}",
                resources.get("cpu", "0"),
                resources.get(NVIDIA_GPU, "0"),
                resources.get(GOOGLE_TPU, "0"),
                resources.get("memory", "0"),
                rc_name,
            ]
        )
    return printer.table(headers, rows)


async def token(kube: Kube, cluster: str) -> str:
    ref = f"{kube.namespace}/{cluster}"
    try:
        rc = await kube.client.get(RAYCLUSTER, cluster, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"failed to get RayCluster {ref}: {describe(e, RAYCLUSTER)}") from e
    if ((rc.get("spec") or {}).get("authOptions") or {}).get("mode") != "token":
        raise PluginError(f"RayCluster {ref} was not configured to use authentication tokens")
    try:
        secret = await kube.client.get(SECRET, cluster, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"failed to get secret {ref}: {describe(e)}") from e
    encoded = (secret.get("data") or {}).get("auth_token")
    if encoded is None:
        raise PluginError(f"secret {ref} does not have an auth_token")
    return base64.b64decode(encoded).decode()
