"""`kubectl ray create cluster` and `create workergroup`: upstream's checks, writes and messages.

The cluster's configuration comes from `--file` (upstream's config file, with only the flags that say how to
create allowed beside it, the others named in the error as Go prints a list) or from the flags; the
worker group's from its flags, with upstream's checks of quantities and TPUs.

A cluster is written by server-side apply (field manager `ray-kubectl-plugin`) after a GET has shown that
it does not exist yet; `--wait` follows the RayCluster until it is provisioned (condition
`RayClusterProvisioned` True, or state `ready`), printing each new state on a terminal. A worker group is
appended to the cluster's spec and the cluster replaced (PUT), as upstream does, so a concurrent writer
makes it fail with a conflict instead of losing a write.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kuberay.kubectl import generation, printer
from kuberay.kubectl.generation import ClusterConfig, raycluster, resource_list
from kuberay.kubectl.kube import Kube, PluginError, describe
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.client import PatchType

# Flags that may accompany --file: they say how to create, not what.
ALLOWED_WITH_FILE = {"file", "dry_run", "wait", "timeout"}
# The flags whose value is a quantity, checked when given (or when their default is not empty).
QUANTITY_FLAGS = ("head_cpu", "head_gpu", "head_memory", "head_ephemeral_storage", "worker_cpu", "worker_gpu",
                  "worker_tpu", "worker_memory", "worker_ephemeral_storage")  # fmt: skip


def _checked(check: Any, *args: Any) -> None:
    try:
        check(*args)
    except generation.ClusterConfigError as e:
        raise PluginError(str(e)) from e


def check_with_file(given: Iterable[str]) -> None:
    """`given`: the flags set on the command line beside `--file`, by their Python names."""
    incompatible = sorted(name.replace("_", "-") for name in given if name not in ALLOWED_WITH_FILE)
    if incompatible:
        raise PluginError(
            f"the following flags are incompatible with --file: {printer.go_list(incompatible)}"
        )


def config_file(path: Path) -> ClusterConfig:
    if not path.exists():
        raise PluginError(f"failed to parse config file: config file {path} does not exist")
    try:
        config = generation.parse_config(yaml.safe_load(path.read_text()))
    except (yaml.YAMLError, generation.ClusterConfigError) as e:
        raise PluginError(f"failed to parse config file: {e}") from e
    try:
        generation.validate_config(config)
    except generation.ClusterConfigError as e:
        raise PluginError(f"failed to validate config file: {e}") from e
    return config


def file_target(config: ClusterConfig, name: str | None, namespace: str | None) -> tuple[str, str]:
    """The cluster's name and namespace from the file and the command line, which must agree."""
    if config.name and name and config.name != name:
        raise PluginError(
            f'the cluster name in the config file "{config.name}" does not match the cluster name "{name}". '
            "You must use the same name to perform this operation"
        )
    name = name or config.name
    if not name:
        raise PluginError("the cluster name is required")
    if namespace and config.namespace and namespace != config.namespace:
        raise PluginError(
            f'the namespace in the config file "{config.namespace}" does not match the namespace "{namespace}". '
            f"You must pass --namespace={config.namespace} to perform this operation"
        )
    return name, config.namespace or namespace or ""


def image(flags: dict[str, Any]) -> str:
    """`--image`, else the image of `--ray-version` (also when `--image` is left at the default's)."""
    chosen = str(flags["image"] or f"rayproject/ray:{flags['ray_version']}")
    if chosen == generation.RAY_IMAGE and flags["ray_version"] != generation.RAY_VERSION:
        return f"rayproject/ray:{flags['ray_version']}"
    return chosen


def config_from_flags(flags: dict[str, Any], given: Iterable[str]) -> ClusterConfig:
    """The configuration `create cluster` makes from its flags; `given`: those set on the command line."""
    explicit = set(given)
    for name in QUANTITY_FLAGS:
        if flags[name] != "" or name in explicit:
            _checked(generation.validate_quantity, flags[name], name.replace("_", "-"))
    config = generation.ClusterConfig(
        labels=flags["labels"],
        annotations=flags["annotations"],
        ray_version=flags["ray_version"],
        image=image(flags),
        head=generation.Head(
            cpu=flags["head_cpu"], memory=flags["head_memory"], gpu=flags["head_gpu"],
            ephemeral_storage=flags["head_ephemeral_storage"],
            ray_start_params=flags["head_ray_start_params"], node_selectors=flags["head_node_selectors"],
        ),
        worker_groups=[generation.WorkerGroup(
            name="default-group", replicas=flags["worker_replicas"], num_of_hosts=flags["num_of_hosts"],
            cpu=flags["worker_cpu"], memory=flags["worker_memory"], gpu=flags["worker_gpu"], tpu=flags["worker_tpu"],
            ephemeral_storage=flags["worker_ephemeral_storage"],
            ray_start_params=flags["worker_ray_start_params"], node_selectors=flags["worker_node_selectors"],
        )],
        autoscaler=generation.Autoscaler(version=flags["autoscaler"].lower()) if flags["autoscaler"] else None,
    )  # fmt: skip
    first = config.worker_groups[0]
    _checked(generation.validate_tpu, first.tpu, first.num_of_hosts, first.node_selectors)
    return config


def worker_group_from_flags(name: str, flags: dict[str, Any]) -> dict[str, Any]:
    """The worker group `create workergroup` appends, after upstream's checks of its flags."""
    for flag in ("worker_cpu", "worker_gpu", "worker_tpu", "worker_memory"):
        _checked(generation.validate_quantity, flags[flag], flag.replace("_", "-"))
    _checked(
        generation.validate_tpu, flags["worker_tpu"], flags["num_of_hosts"], flags["worker_node_selectors"]
    )
    return worker_group_spec(
        name, image=flags["image"] or f"rayproject/ray:{flags['ray_version']}",
        replicas=flags["worker_replicas"], num_of_hosts=flags["num_of_hosts"],
        min_replicas=flags["worker_min_replicas"], max_replicas=flags["worker_max_replicas"],
        cpu=flags["worker_cpu"], memory=flags["worker_memory"], gpu=flags["worker_gpu"], tpu=flags["worker_tpu"],
        ray_start_params=flags["worker_ray_start_params"], node_selectors=flags["worker_node_selectors"],
    )  # fmt: skip


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
    except errors.NotFoundError as e:
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
