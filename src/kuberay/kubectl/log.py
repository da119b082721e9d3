"""`kubectl ray log`: each Ray node's logs into a local directory, or a link to them in GKE's console.

For every pod of the cluster (all nodes, the head or the workers): its first container's output into
`<out>/<pod>/stdout.log`, then Ray's log directory (`/tmp/ray/session_latest/logs`) packed by `tar` in
that container and unpacked under `<out>/<pod>/`, directories and regular files only (links and devices
are skipped, and no member may leave the pod's directory). Both go through the real `kubectl logs` and
`kubectl exec`, so they work on any cluster kubectl reaches. A RayJob or RayService names its cluster in
its status. The default directory is the resource's name in the working directory, removed again when
nothing was written to it.

Before it reaches the cluster the command says, as upstream's does, which nodes it is set to read and that
it makes the default directory, and checks `--link` and `--out-dir` in upstream's words. `--link gke`
warns on stderr, as upstream does, when the head pod has no `fluentbit` container or the kubectl context
is not a GKE one.

A RayJob's own output comes first, beside the nodes' directories: the Ray job's logs (its driver's output)
read from the head's dashboard (`GET /api/jobs/<jobId>/logs` through a `kubectl port-forward`) into
`job-driver-<jobId>.log`, and the submitter's log (`kubectl logs job/<name>`, K8sJobMode, or the head's
`ray-job-submitter` container, SidecarMode) into `submitter.log`. Either may be missing (no dashboard once
the cluster is deleted, no submitter in HTTPMode and InteractiveMode): a line says why, and the command
fails only when nothing at all was found.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import os
import stat
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote_plus

import httpx

from kuberay.api.constants import SUBMITTER_CONTAINER_NAME
from kuberay.kubectl import delete, session
from kuberay.kubectl.kube import Kube, KubeFlags, PluginError, TargetError, describe
from kuberay.rayclient.dashboard import DashboardClient, DashboardError
from kuberay.rayresources import RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.resources import POD

LOG_DIR = "/tmp/ray/session_latest/logs/"
# A finished job's dashboard answers at once; one that does not is not waited for as `job submit` waits.
DASHBOARD_TIMEOUT = 6.0
NODE_TYPES = ("all", "head", "worker")
NODE_TYPE_LINES = {
    "all": "Command set to retrieve both head and worker node logs.",
    "head": "Command set to retrieve only head node logs.",
    "worker": "Command set to retrieve only worker node logs.",
}
DEFAULT_DIR_LINE = "No output directory specified, creating dir under current directory using resource name."
FLUENTBIT = "fluentbit"
NO_FLUENTBIT_WARNING = (
    "Warning: The head pod does not have a 'fluentbit' container. "
    "Logs might not be exported to Google Cloud Logging."
)
NOT_GKE_WARNING = (
    "Warning: The current kubectl context does not appear to be a GKE cluster. "
    "The generated link may not work."
)
# Where each kind's status names its RayCluster.
CLUSTER_PATH = {
    "raycluster": (),
    "rayjob": ("rayClusterName",),
    "rayservice": ("activeServiceStatus", "rayClusterName"),
}


def parse_target(arg: str) -> tuple[str, str]:
    """(kind, name) of `NAME` or `TYPE/NAME`, the type in any case; an unknown type is named alone, as
    upstream's `log` names it (`delete` names the whole argument)."""
    parts = arg.split("/")
    if len(parts) == 1:
        return "raycluster", parts[0]
    if len(parts) != 2 or not parts[1]:
        raise TargetError(f"invalid resource type/name: {arg}")
    kind = parts[0].lower()
    if kind not in CLUSTER_PATH:
        raise TargetError(f"unsupported resource type: {parts[0]}")
    return kind, parts[1]


def _go_errno(e: OSError) -> str:
    """The error as Go's syscall.Errno prints it: the C library's text, lower-cased."""
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]


def prepare(node_type: str, link: str | None, out_dir: str | None, name: str) -> tuple[Path | None, bool]:
    """Upstream's checks before the cluster is asked: the directory to write to (None with a link) and
    whether this made it."""
    print(NODE_TYPE_LINES[node_type], flush=True)
    if link is not None:
        if link != "gke":
            raise PluginError(f'unsupported link type "{link}", only "gke" is supported')
        if out_dir is not None:
            raise PluginError("--out-dir is incompatible with --link")
        return None, False
    created = False
    if out_dir is None:
        print(DEFAULT_DIR_LINE, flush=True)
        out_dir = name
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as e:
            # Go's MkdirAll over a file says "not a directory" where Python says the file exists.
            reason = "not a directory" if isinstance(e, FileExistsError) else _go_errno(e)
            raise PluginError(
                f"could not create directory with cluster name {out_dir}: mkdir {out_dir}: {reason}"
            ) from e
        created = True
    try:
        mode = os.stat(out_dir).st_mode
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise PluginError(f"Directory does not exist. Failed with: stat {out_dir}: {_go_errno(e)}") from e
        # Upstream's words, its "will" for "while" included.
        raise PluginError(f"Error occurred will checking directory: stat {out_dir}: {_go_errno(e)}") from e
    if not stat.S_ISDIR(mode):
        raise PluginError("Path is not a directory. Please input a directory and try again")
    return Path(out_dir), created


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
    # quote_plus is Go's url.QueryEscape, which upstream escapes the query and the project with.
    link = "https://console.cloud.google.com/logs/query;query=" + quote_plus("\n".join(lines), safe="")
    if is_gke_context(context):
        # GKE names its contexts gke_PROJECT_LOCATION_NAME.
        link += "?project=" + quote_plus(context.split("_")[1], safe="")
    return link


def is_gke_context(context: str) -> bool:
    return context.startswith("gke_")


async def gke_warnings(kube: Kube, cluster: str, context: str) -> list[str]:
    """Why the link may show nothing: the head exports no logs (no fluentbit), or the cluster is no GKE one."""
    warnings = []
    try:
        heads = (
            await kube.client.list_all(POD, kube.namespace, label_selector=selector(cluster, "head"))
        ).items
    except errors.KubeError:
        # Upstream warns only about a head it could read; the link is printed either way.
        heads = []
    if heads and all(c.get("name") != FLUENTBIT for c in heads[0]["spec"].get("containers") or []):
        warnings.append(NO_FLUENTBIT_WARNING)
    if not is_gke_context(context):
        warnings.append(NOT_GKE_WARNING)
    return warnings


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


@contextlib.contextmanager
def removed_on_failure(directory: Path | None, created: bool) -> Iterator[None]:
    """The directory `prepare` made goes again if the command fails before writing to it."""
    try:
        yield
    except BaseException:
        if created and directory is not None:
            # rmdir removes only an empty directory: whatever was downloaded before the failure stays.
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise


async def logs(
    kube: Kube, flags: KubeFlags, kind: str, name: str, directory: Path | None, node_type: str
) -> None:
    """The whole command once `prepare` has passed: a GKE link (`directory` None), or the logs of
    `kind/name` downloaded into `directory`."""
    cluster = await cluster_name(kube, kind, name)
    if directory is None:
        context = flags.context or kube.context
        for warning in await gke_warnings(kube, cluster, context):
            print(warning, file=sys.stderr, flush=True)
        print(gke_link(kube.namespace, cluster, node_type, context))
        return
    found = await job_output(kube, flags, name, directory) if kind == "rayjob" else 0
    found += await download(kube, flags, cluster, node_type, directory) if cluster or not found else 0
    if not found:
        raise PluginError(f"No Ray nodes found for resource {cluster or name}")
