"""`kubectl ray job submit`: a RayJob in InteractiveMode, then the job itself through the head's dashboard.

The steps are upstream's: create the RayJob (from `-f`, or generated and server-side applied) with
`spec.jobId` set to the submission id; wait for its RayCluster to be named and then ready (2 s polls, 120 s
bound, the RayJob deleted on timeout); port-forward the head service's dashboard port with the real
`kubectl port-forward` (to any free local port, where upstream takes 8265, so a running `kubectl ray
session` does not collide); submit the job. Where upstream runs `ray job submit`, this module calls Ray's
own job SDK (`ray.job_submission.JobSubmissionClient`, from the `ray` wheel), which uploads the working
directory and streams the job's logs the same way; the equivalent `ray` command is printed. Then the RayJob
is watched until its job status is terminal.

A forward that drops mid-tail does not end the command (in upstream v1.7.0 it killed it; since kuberay#5147
upstream lets `ray job submit` fail and then decides by the RayJob's status): the forward is made again and
the tail resumed through it, and the exit is by the RayJob's job status as upstream decides it, whatever the
log stream ended with. The job's status is read again before each try, so a job that has finished (its
cluster deleted at once with `--ttl-seconds-after-finished 0`, upstream's case) is not waited on.
"""

from __future__ import annotations

import asyncio
import json
import random
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kuberay.kubectl import generation, printer, session
from kuberay.kubectl.kube import Kube, KubeFlags, PluginError, describe
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.client import PatchType

SUBMISSION_ID_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ123456789"
POLL = 2.0
CLUSTER_TIMEOUT = 120.0
TERMINAL = ("SUCCEEDED", "STOPPED", "FAILED")
# Re-forwarding after a drop: tries per drop, the wait before the second (doubled for each next), and how
# many drops one command rides out before it leaves the logs and follows only the RayJob's status.
REFORWARD_TRIES = 5
REFORWARD_BACKOFF = 1.0
MAX_DROPS = 10


@dataclass
class Submit:
    """The command's flags, as upstream names them."""

    entrypoint: list[str]
    filename: str | None = None
    address: str | None = None
    submission_id: str | None = None
    runtime_env: str | None = None
    runtime_env_json: str | None = None
    working_dir: str | None = None
    headers: str | None = None
    verify: str | None = None
    entrypoint_resources: str | None = None
    metadata_json: str | None = None
    entrypoint_num_cpus: float = 0.0
    entrypoint_num_gpus: float = 0.0
    entrypoint_memory: int = 0
    no_wait: bool = False
    name: str = ""
    ray_version: str = generation.RAY_VERSION
    image: str = generation.RAY_IMAGE
    head_cpu: str = "2"
    head_memory: str = "4Gi"
    head_gpu: str = "0"
    worker_replicas: int = 1
    worker_cpu: str = "2"
    worker_memory: str = "4Gi"
    worker_gpu: str = "0"
    dry_run: bool = False
    verbose: bool = False
    head_node_selectors: dict[str, str] = field(default_factory=dict)
    worker_node_selectors: dict[str, str] = field(default_factory=dict)
    ttl_seconds_after_finished: int | None = None
    rayjob: dict[str, Any] = field(default_factory=dict)
    shutdown_after_job_finishes: bool = False


def submission_id() -> str:
    return "raysubmit_" + "".join(random.choices(SUBMISSION_ID_ALPHABET, k=16))


def validate(options: Submit) -> None:
    """Upstream's checks before anything is written; fills the working dir and runtime env from the files."""
    if not options.entrypoint:
        raise PluginError("the entrypoint is required after --, e.g. -- python script.py")
    if options.runtime_env:
        path = Path(options.runtime_env)
        if not path.exists():
            raise PluginError(
                f"Runtime Env file does not exist. Failed with: stat {path}: no such file or directory"
            )
        if not path.is_file():
            raise PluginError("Filename given is not a regular file.")
        env = yaml.safe_load(path.read_text()) or {}
        if env.get("working_dir") and not options.working_dir:
            options.working_dir = str(env["working_dir"])
    if options.ttl_seconds_after_finished is not None:
        options.shutdown_after_job_finishes = True
        if options.ttl_seconds_after_finished < 0:
            raise PluginError("--ttl-seconds-after-finished must be greater than or equal to 0")
    if options.filename:
        path = Path(options.filename)
        if not path.exists():
            raise PluginError(
                f"Ray Job file does not exist. Failed with: stat {path}: no such file or directory"
            )
        rayjob = yaml.safe_load(path.read_text())
        if not isinstance(rayjob, dict) or rayjob.get("kind") != "RayJob":
            raise PluginError("Failed to decode RayJob Yaml: the file does not hold a RayJob")
        spec = rayjob.setdefault("spec", {})
        if spec.get("submissionMode") != "InteractiveMode":
            raise PluginError("Submission mode of the Ray Job must be set to 'InteractiveMode'")
        if (spec.get("backoffLimit") or 0) > 0:
            raise PluginError("BackoffLimit is incompatible with InteractiveMode")
        if not options.runtime_env and not options.runtime_env_json and spec.get("runtimeEnvYAML"):
            options.runtime_env_json = json.dumps(yaml.safe_load(spec["runtimeEnvYAML"]))
        if options.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = options.ttl_seconds_after_finished
            spec["shutdownAfterJobFinishes"] = True
        if spec.get("ttlSecondsAfterFinished", 0) < 0:
            raise PluginError("ttlSecondsAfterFinished must be greater than or equal to 0")
        if not spec.get("shutdownAfterJobFinishes") and spec.get("ttlSecondsAfterFinished", 0) > 0:
            raise PluginError(
                "ttlSecondsAfterFinished is only supported when shutdownAfterJobFinishes is set to true"
            )
        options.rayjob = rayjob
    elif not options.name.strip():
        raise PluginError("Must set either yaml file (--filename) or set Ray job name (--name)")
    if not options.working_dir:
        raise PluginError("working directory is required, use --working-dir or set with runtime env")
    for name in ("head_cpu", "head_gpu", "head_memory", "worker_cpu", "worker_gpu", "worker_memory"):
        try:
            generation.validate_quantity(getattr(options, name), name.replace("_", "-"))
        except generation.ClusterConfigError as e:
            raise PluginError(str(e)) from e
    if options.address is not None and not options.address.strip():
        raise PluginError("--address was provided but is empty")


def generated_rayjob(options: Submit, namespace: str, job_id: str) -> dict[str, Any]:
    """The RayJob upstream generates without `-f`: the cluster of `create cluster` with these resources."""
    config = generation.ClusterConfig(
        ray_version=options.ray_version,
        image=options.image,
        head=generation.Head(cpu=options.head_cpu, memory=options.head_memory, gpu=options.head_gpu,
                             node_selectors=options.head_node_selectors),
        worker_groups=[generation.WorkerGroup(cpu=options.worker_cpu, memory=options.worker_memory,
                                              gpu=options.worker_gpu, replicas=options.worker_replicas,
                                              node_selectors=options.worker_node_selectors)],
    )  # fmt: skip
    cluster = generation.raycluster(config, options.name, namespace)
    return {
        "apiVersion": RAYJOB.api_version,
        "kind": RAYJOB.kind,
        "metadata": {"name": options.name, "namespace": namespace},
        "spec": {
            "submissionMode": "InteractiveMode",
            "entrypoint": " ".join(options.entrypoint),
            "ttlSecondsAfterFinished": options.ttl_seconds_after_finished or 0,
            "shutdownAfterJobFinishes": options.shutdown_after_job_finishes,
            "jobId": job_id,
            "rayClusterSpec": cluster["spec"],
        },
    }


def ray_command(options: Submit, address: str, job_id: str) -> list[str]:
    """The `ray job submit` command upstream runs, which the SDK call below is equivalent to."""
    command = ["ray", "job", "submit", "--address", address]
    for flag, value in (("--runtime-env", options.runtime_env), ("--runtime-env-json", options.runtime_env_json),
                        ("--submission-id", job_id)):  # fmt: skip
        if value:
            command += [flag, value]
    if options.entrypoint_num_cpus > 0:
        command += ["--entrypoint-num-cpus", f"{options.entrypoint_num_cpus:f}"]
    if options.entrypoint_num_gpus > 0:
        command += ["--entrypoint-num-gpus", f"{options.entrypoint_num_gpus:f}"]
    if options.entrypoint_memory > 0:
        command += ["--entrypoint-memory", str(options.entrypoint_memory)]
    for flag, value in (("--entrypoint-resource", options.entrypoint_resources),
                        ("--metadata-json", options.metadata_json)):  # fmt: skip
        if value:
            command += [flag, value]
    if options.no_wait:
        command.append("--no-wait")
    for flag, value in (("--headers", options.headers), ("--verify", options.verify)):
        if value:
            command += [flag, value]
    if options.verbose:
        command.append("--verbose")
    return [
        *command,
        "--working-dir",
        options.working_dir or "",
        "--",
        *shlex.split(" ".join(options.entrypoint)),
    ]


def runtime_env(options: Submit) -> dict[str, Any]:
    env: dict[str, Any] = {}
    if options.runtime_env:
        env = yaml.safe_load(Path(options.runtime_env).read_text()) or {}
    elif options.runtime_env_json:
        env = json.loads(options.runtime_env_json)
    env["working_dir"] = options.working_dir
    return env


async def submit(kube: Kube, flags: KubeFlags, options: Submit) -> None:
    job_id = options.submission_id or submission_id()
    if not options.submission_id:
        print(f"Generated submission ID for Ray job: {job_id}", flush=True)
    if not options.filename:
        rayjob = generated_rayjob(options, kube.namespace, job_id)
        if options.dry_run:
            print(printer.to_yaml(rayjob))
            return
        try:
            await kube.client.patch(RAYJOB, options.name, rayjob, kube.namespace, patch_type=PatchType.APPLY)
        except errors.KubeError as e:
            raise PluginError(f"Failed to apply generated YAML: {describe(e, RAYJOB)}") from e
        name = options.name
    else:
        rayjob = options.rayjob
        rayjob["spec"]["jobId"] = job_id
        try:
            name = (await kube.client.create(RAYJOB, rayjob, kube.namespace))["metadata"]["name"]
        except errors.KubeError as e:
            raise PluginError(f"Error when creating RayJob CR: {describe(e, RAYJOB)}") from e
    print(f"Submitted RayJob {name}.", flush=True)

    cluster = await _cluster_of(kube, name)
    await _wait_cluster_ready(kube, name, cluster)
    forward: session.DashboardForward | None = None
    try:
        if options.address:
            address = options.address
            print(f"Using address {address} (no port-forwarding)", flush=True)
        else:
            service = await session.head_service(kube, "raycluster", cluster)
            print(f"Port forwarding service {service}", flush=True)
            forward = session.DashboardForward(flags, kube, service)
            address = await forward.start()
            print(f"Port forwarding started on {address}", flush=True)
        print(f"Ray command: [{' '.join(ray_command(options, address, job_id))}]", flush=True)
        print("Running Ray submit job command...", flush=True)
        try:
            await _submit_with_sdk(options, address, job_id)
        except PluginError:
            raise
        # Whatever the SDK raises (its own errors, requests', aiohttp's) is upstream's `ray job submit` failing.
        except Exception as e:
            await _submit_failed(kube, name, forward is not None, e)
            return
        else:
            if not options.no_wait:
                await _follow_logs(kube, name, options, job_id, address, forward)
    finally:
        if forward is not None:
            await forward.stop()
    if options.no_wait:
        print(f"Ray job submitted with ID {job_id}")
        return
    await _watch_until_terminal(kube, name)


async def _cluster_of(kube: Kube, name: str) -> str:
    while True:
        try:
            job = await kube.client.get(RAYJOB, name, kube.namespace)
        except errors.KubeError as e:
            raise PluginError("Failed to get Ray Job status") from e
        cluster = (job.get("status") or {}).get("rayClusterName")
        if cluster:
            return str(cluster)
        await asyncio.sleep(POLL)


def _ready(cluster: dict[str, Any]) -> bool:
    status = cluster.get("status") or {}
    return status.get("state") == "ready" or any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


async def _wait_cluster_ready(kube: Kube, job: str, cluster: str) -> None:
    print("Waiting for RayCluster", flush=True)
    print(f"Checking Cluster Status for cluster {cluster}...", flush=True)
    deadline = time.monotonic() + CLUSTER_TIMEOUT
    while time.monotonic() <= deadline:
        await asyncio.sleep(POLL)
        try:
            current = await kube.client.get(RAYCLUSTER, cluster, kube.namespace)
        except errors.KubeError as e:
            raise PluginError(f"Failed to get cluster information with error: {describe(e)}") from e
        if _ready(current):
            return
        print("Cluster is not ready", flush=True)
    print("Deleting RayJob...", flush=True)
    try:
        await kube.client.delete(RAYJOB, job, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"Failed to clean up Ray job after time out.: {describe(e)}") from e
    print(f"Cleaned Up RayJob: {job}", flush=True)
    raise PluginError("Timed out waiting for cluster")


async def _sdk_client(options: Submit, address: str) -> Any:
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError as e:
        raise PluginError("job submit needs Ray's job SDK: pip install 'ray[default]'") from e
    headers = json.loads(options.headers) if options.headers else None
    verify: bool | str = True
    if options.verify is not None:
        verify = {"true": True, "false": False}.get(options.verify.lower(), options.verify)
    return await asyncio.to_thread(JobSubmissionClient, address, headers=headers, verify=verify)


async def _submit_with_sdk(options: Submit, address: str, job_id: str) -> None:
    client = await _sdk_client(options, address)
    await asyncio.to_thread(
        client.submit_job,
        entrypoint=" ".join(options.entrypoint),
        submission_id=job_id,
        runtime_env=runtime_env(options),
        metadata=json.loads(options.metadata_json) if options.metadata_json else None,
        entrypoint_num_cpus=options.entrypoint_num_cpus or None,
        entrypoint_num_gpus=options.entrypoint_num_gpus or None,
        entrypoint_memory=options.entrypoint_memory or None,
        entrypoint_resources=json.loads(options.entrypoint_resources)
        if options.entrypoint_resources
        else None,
    )
    print(f"Job '{job_id}' submitted successfully", flush=True)


async def _job_status(kube: Kube, name: str) -> dict[str, Any]:
    """The RayJob's status now; empty when it cannot be read (the caller goes on as if not terminal)."""
    try:
        job = await kube.client.get(RAYJOB, name, kube.namespace)
    except errors.KubeError:
        return {}
    return dict(job.get("status") or {})


def _ended_well(status: dict[str, Any]) -> bool:
    """Upstream's verdict on a RayJob's job status: True when it succeeded or was stopped, False while it
    is not terminal; a failed one raises upstream's error, which is the command's."""
    job_status, job_id = status.get("jobStatus", ""), status.get("jobId") or "unknown"
    if job_status == "FAILED":
        message = status.get("message")
        raise PluginError(
            f"job {job_id} failed: {message}" if message else f"job {job_id} failed with status FAILED"
        )
    return job_status in TERMINAL


async def _submit_failed(kube: Kube, name: str, forwarded: bool, error: Exception) -> None:
    """Upstream's answer to `ray job submit` failing: through its own forward, the job may have ended and
    its cluster gone with the forward, so a terminal RayJob decides; else the submit's error does."""
    failed = PluginError(f"Error occurred with Ray job submit: {error}")
    if not forwarded:
        raise failed from error
    status = await _job_status(kube, name)
    if not _ended_well(status):
        raise failed from error
    print(f"Ray CLI exited after RayJob {name} reached status {status.get('jobStatus')}; treating the "
          "submission as successful.", file=sys.stderr, flush=True)  # fmt: skip


@dataclass
class _Log:
    """How much of the job's log has been printed: the dashboard's tail always starts at the log's
    beginning, so a tail begun again after a drop skips that much rather than print it twice."""

    printed: int = 0

    async def tail(self, client: Any, job_id: str) -> None:
        skip = self.printed
        async for chunk in client.tail_job_logs(job_id):
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            chunk, skip = chunk[skip:], 0
            print(chunk, end="", flush=True)
            self.printed += len(chunk)


async def _follow_logs(
    kube: Kube,
    name: str,
    options: Submit,
    job_id: str,
    address: str,
    forward: session.DashboardForward | None,
) -> None:
    """Prints the job's log until it ends. Through our own forward, a drop (kubectl exiting, or the tail
    failing while it runs) makes the forward again and resumes the tail; when it cannot, the RayJob watch
    after this still decides the exit, so the log stream's error never does."""
    log = _Log()

    async def tail(address: str) -> None:
        await log.tail(await _sdk_client(options, address), job_id)

    if forward is None:
        try:
            await tail(address)
        except PluginError:
            raise
        except Exception as e:  # the SDK's errors, as in `submit`
            raise PluginError(f"Error occurred with Ray job submit: {e}") from e
        return
    url: str | None = address
    for _ in range(MAX_DROPS):
        assert url is not None
        tailing = asyncio.create_task(tail(url))
        ended = forward.ended
        await asyncio.wait({tailing, ended}, return_when=asyncio.FIRST_COMPLETED)
        if tailing.done() and tailing.exception() is None:
            return
        if ended.done():
            # The tail may not have seen its connection go yet; it cannot go on without the forward.
            tailing.cancel()
            # Waited on, not awaited: a cancellation of this task then stays this task's.
            await asyncio.wait({tailing})
            if not tailing.cancelled():
                tailing.exception()  # retrieved, so that asyncio does not report it as never retrieved
            reason = f"kubectl exited with status {ended.result()}"
        else:
            reason = f"the job's log tail through it failed: {tailing.exception()}"
        print(f"Port-forward to Ray dashboard ended: {reason}", file=sys.stderr, flush=True)
        url = await _reforward(kube, name, forward)
        if url is None:
            return
    print(f"Port forwarding dropped {MAX_DROPS} times; following the RayJob's status only", file=sys.stderr,
          flush=True)  # fmt: skip


async def _reforward(kube: Kube, name: str, forward: session.DashboardForward) -> str | None:
    """The forward made again (its URL), or None: the RayJob's job status is terminal (nothing left to
    tail, and with TTL 0 no cluster to forward to), or `REFORWARD_TRIES` tries, backing off, all failed."""
    delay = REFORWARD_BACKOFF
    for attempt in range(1, REFORWARD_TRIES + 1):
        if (await _job_status(kube, name)).get("jobStatus") in TERMINAL:
            return None
        try:
            address = await forward.start()
        except PluginError as e:
            print(f"Could not re-establish port forwarding (try {attempt} of {REFORWARD_TRIES}): {e}",
                  file=sys.stderr, flush=True)  # fmt: skip
            if attempt < REFORWARD_TRIES:
                await asyncio.sleep(delay)
                delay *= 2
            continue
        print(f"Port forwarding re-established on {address}", flush=True)
        return address
    await forward.stop()
    return None


async def _watch_until_terminal(kube: Kube, name: str) -> None:
    print("Waiting for job to finish...", flush=True)
    job = await kube.client.get(RAYJOB, name, kube.namespace)
    version = job["metadata"]["resourceVersion"]
    while True:
        status = job.get("status") or {}
        job_status, job_id = status.get("jobStatus", ""), status.get("jobId") or "unknown"
        print(f"Current status: {job_status} (RayJob: {name}, JobID: {job_id})", flush=True)
        if _ended_well(status):
            print(f"Job {job_id} finished with status {job_status}.")
            return
        try:
            async for event in kube.client.watch(RAYJOB, kube.namespace, resource_version=version,
                                                 field_selector=f"metadata.name={name}"):  # fmt: skip
                if event["type"] in ("ADDED", "MODIFIED"):
                    job = event["object"]
                    version = job["metadata"]["resourceVersion"]
                    break
                if event["type"] == "DELETED":
                    raise PluginError(f"RayJob {name} was deleted before its job finished")
        except (errors.Gone, errors.Unavailable):
            job = await kube.client.get(RAYJOB, name, kube.namespace)
            version = job["metadata"]["resourceVersion"]
