"""`kubectl ray log`: each Ray node's logs into a local directory, or a link to them in GKE's console.

For every pod of the cluster (all nodes, the head or the workers): its first container's output into
`<out>/<pod>/stdout.log`, then Ray's log directory (`/tmp/ray/session_latest/logs`) packed by `tar` in
that container and unpacked under `<out>/<pod>/`, directories and regular files only (links and devices
are skipped, and no member may leave the pod's directory). Both go through the real `kubectl logs` and
`kubectl exec`, so they work on any cluster kubectl reaches. A RayJob or RayService names its cluster in
its status. The default directory is the resource's name in the working directory, removed again when
the cluster has no pods.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from kuberay.kubectl import delete, session
from kuberay.kubectl.kube import Kube, KubeFlags, PluginError, describe
from kuberay.runtime import errors
from kuberay.runtime.resources import POD

LOG_DIR = "/tmp/ray/session_latest/logs/"
NODE_TYPES = ("all", "head", "worker")
# Where each kind's status names its RayCluster.
CLUSTER_PATH = {
    "raycluster": (),
    "rayjob": ("rayClusterName",),
    "rayservice": ("activeServiceStatus", "rayClusterName"),
}


async def cluster_name(kube: Kube, kind: str, name: str) -> str:
    if kind == "raycluster":
        return name
    try:
        obj = await kube.client.get(delete.KINDS[kind], name, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(
            f"failed to retrieve Ray job info for {name}: {describe(e, delete.KINDS[kind])}"
        ) from e
    value: Any = obj.get("status") or {}
    for key in CLUSTER_PATH[kind]:
        value = value.get(key) if isinstance(value, dict) else None
    return str(value or "")


def selector(cluster: str, node_type: str) -> str:
    return f"ray.io/cluster={cluster}" + ("" if node_type == "all" else f",ray.io/node-type={node_type}")


def gke_link(namespace: str, cluster: str, node_type: str, context: str) -> str:
    lines = ['resource.type="k8s_container"', f'resource.labels.namespace_name="{namespace}"',
             f'labels."k8s-pod/ray_io/cluster"="{cluster}"']  # fmt: skip
    if node_type == "all":
        lines.append('labels."k8s-pod/ray_io/is-ray-node"="yes"')
    else:
        lines.append(f'labels."k8s-pod/ray_io/node-type"="{node_type}"')
    link = "https://console.cloud.google.com/logs/query;query=" + quote("\n".join(lines), safe="")
    parts = context.split("_")
    if len(parts) >= 2 and parts[0] == "gke":
        link += f"?project={parts[1]}"
    return link


def unpack(stream: IO[bytes], target: Path) -> None:
    """Directories and regular files of a tar stream under `target`; nothing outside it."""
    root = target.resolve()
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            path = (root / member.name).resolve()
            if path != root and root not in path.parents:
                continue
            if member.isdir():
                path.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                path.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                if source is not None:
                    with path.open("wb") as out:
                        while chunk := source.read(1 << 20):
                            out.write(chunk)
            else:
                print(f"Ignoring unsupported file type: {member.type!r}")


async def _kubectl(flags: KubeFlags, kube: Kube, *args: str) -> bytes:
    process = await asyncio.create_subprocess_exec(
        *session.kubectl(flags, flags.context or kube.context), "-n", kube.namespace, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    if process.returncode != 0:
        raise PluginError(err.decode(errors="replace").strip() or f"kubectl {args[0]} failed")
    return out


async def download(kube: Kube, flags: KubeFlags, cluster: str, node_type: str, out_dir: Path, created: bool) -> None:  # fmt: skip
    try:
        pods = (
            await kube.client.list_all(POD, kube.namespace, label_selector=selector(cluster, node_type))
        ).items
    except errors.KubeError as e:
        raise PluginError(f"failed to retrieve head node for Ray cluster {cluster}: {describe(e)}") from e
    if not pods:
        if created:
            out_dir.rmdir()
        raise PluginError(f"No Ray nodes found for resource {cluster}")
    for pod in pods:
        name = pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]["name"]
        target = out_dir / name
        target.mkdir(parents=True, exist_ok=True)
        try:
            (target / "stdout.log").write_bytes(await _kubectl(flags, kube, "logs", name, "-c", container))
        except PluginError as e:
            raise PluginError(f"Error retrieving log for Ray cluster node {name}: {e}") from e
        print(f"Downloading log for Ray Node {name}", flush=True)
        packed = await _kubectl(
            flags, kube, "exec", name, "-c", container, "--",
            "tar", "--warning=no-file-changed", "-cf", "-", "-C", LOG_DIR, ".",
        )  # fmt: skip
        try:
            unpack(io.BytesIO(packed), target)
        except tarfile.TarError as e:
            raise PluginError(f"error will extracting head tar file for Ray head {name}: {e}") from e
