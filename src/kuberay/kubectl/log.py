"""`kubectl ray log`: each Ray node's logs into a local directory, or a link to them in GKE's console.

For every pod of the cluster (all nodes, the head or the workers): its first container's output into
`<out>/<pod>/stdout.log`, then Ray's log directory (`/tmp/ray/session_latest/logs`) packed by `tar` in
that container and unpacked under `<out>/<pod>/`, directories and regular files only (links and devices
are skipped, and no member may leave the pod's directory). Both go through the real `kubectl logs` and
`kubectl exec`, so they work on any cluster kubectl reaches. A RayJob or RayService names its cluster in
its status. The default directory is the resource's name in the working directory, removed again when
nothing was written to it.

A RayJob's own output comes first, beside the nodes' directories: the Ray job's logs (its driver's output)
read from the head's dashboard (`GET /api/jobs/<jobId>/logs` through a `kubectl port-forward`) into
`job-driver-<jobId>.log`, and the submitter's log (`kubectl logs job/<name>`, K8sJobMode, or the head's
`ray-job-submitter` container, SidecarMode) into `submitter.log`. Either may be missing (no dashboard once
the cluster is deleted, no submitter in HTTPMode and InteractiveMode): a line says why, and the command
fails only when nothing at all was found.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import httpx

from kuberay.api.constants import SUBMITTER_CONTAINER_NAME
from kuberay.kubectl import delete, session
from kuberay.kubectl.kube import Kube, KubeFlags, PluginError, describe
from kuberay.rayclient.dashboard import DashboardClient, DashboardError
from kuberay.rayresources import RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.resources import POD

LOG_DIR = "/tmp/ray/session_latest/logs/"
# A finished job's dashboard answers at once; one that does not is not waited for as `job submit` waits.
DASHBOARD_TIMEOUT = 6.0
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


async def download(kube: Kube, flags: KubeFlags, cluster: str, node_type: str, out_dir: Path) -> int:
    """Each node's logs under `out_dir/<pod>/`; the number of nodes."""
    try:
        pods = (
            await kube.client.list_all(POD, kube.namespace, label_selector=selector(cluster, node_type))
        ).items
    except errors.KubeError as e:
        raise PluginError(f"failed to retrieve head node for Ray cluster {cluster}: {describe(e)}") from e
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
    return len(pods)


async def _driver_log(kube: Kube, flags: KubeFlags, job: dict[str, Any]) -> bytes:
    status = job.get("status") or {}
    job_id = status.get("jobId") or (job.get("spec") or {}).get("jobId")
    service = ((status.get("rayClusterStatus") or {}).get("head") or {}).get("serviceName")
    if not job_id or not service:
        raise PluginError("the RayJob names no Ray job or no head service yet")
    forwarder, address = await session.forward_dashboard(flags, kube, str(service), DASHBOARD_TIMEOUT)
    try:
        async with httpx.AsyncClient(timeout=30.0) as http:
            return (await DashboardClient(http, address).get_job_logs(str(job_id))).encode()
    except DashboardError as e:
        raise PluginError(str(e)) from e
    finally:
        await session.stop(forwarder)


async def _submitter_log(kube: Kube, flags: KubeFlags, job: dict[str, Any]) -> bytes:
    mode = (job.get("spec") or {}).get("submissionMode") or "K8sJobMode"
    if mode == "K8sJobMode":
        return await _kubectl(flags, kube, "logs", f"job/{job['metadata']['name']}")
    if mode == "SidecarMode":
        head = ((job.get("status") or {}).get("rayClusterStatus") or {}).get("head") or {}
        if not head.get("podName"):
            raise PluginError("the RayJob's head pod is not known yet")
        return await _kubectl(flags, kube, "logs", str(head["podName"]), "-c", SUBMITTER_CONTAINER_NAME)
    raise PluginError(f"a RayJob in {mode} has no submitter")


async def job_output(kube: Kube, flags: KubeFlags, name: str, out_dir: Path) -> int:
    """The RayJob's driver output and submitter log into `out_dir`; the number of files written."""
    try:
        job = await kube.client.get(RAYJOB, name, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"failed to retrieve Ray job info for {name}: {describe(e, RAYJOB)}") from e
    job_id = (job.get("status") or {}).get("jobId") or (job.get("spec") or {}).get("jobId") or name
    written = 0
    for what, path, read in (
        ("Ray job logs", out_dir / f"job-driver-{job_id}.log", _driver_log),
        ("submitter log", out_dir / "submitter.log", _submitter_log),
    ):
        try:
            path.write_bytes(await read(kube, flags, job))
        except PluginError as e:
            print(f"No {what} for RayJob {name}: {e}", flush=True)
            continue
        print(f"Downloaded {what} of RayJob {name} to {path}", flush=True)
        written += 1
    return written


def check_link(link: str | None, out_dir: str | None) -> None:
    if link is None:
        return
    if link != "gke":
        raise PluginError(f'unsupported link type "{link}", only "gke" is supported')
    if out_dir is not None:
        raise PluginError("--out-dir is incompatible with --link")


async def logs(
    kube: Kube, flags: KubeFlags, kind: str, name: str, out_dir: str | None, node_type: str, link: str | None
) -> None:
    """The whole command: a GKE link, or the logs of `kind/name` downloaded into `out_dir` (else `./name`)."""
    cluster = await cluster_name(kube, kind, name)
    if link is not None:
        print(gke_link(kube.namespace, cluster, node_type, flags.context or kube.context))
        return
    created = out_dir is None
    directory = Path(out_dir or name)
    if created:
        directory.mkdir(parents=True, exist_ok=True)
    elif not directory.is_dir():
        raise PluginError("Path is not a directory. Please input a directory and try again")
    found = await job_output(kube, flags, name, directory) if kind == "rayjob" else 0
    found += await download(kube, flags, cluster, node_type, directory) if cluster or not found else 0
    if not found:
        if created:
            directory.rmdir()
        raise PluginError(f"No Ray nodes found for resource {cluster or name}")
