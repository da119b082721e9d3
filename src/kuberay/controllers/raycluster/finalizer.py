"""GCS fault tolerance on Redis: the finalizer that keeps a deleted RayCluster until a Job has cleaned
its storage namespace out of Redis (upstream's `GCSFaultToleranceRedisCleanupFinalizer` in `rayClusterReconcile`).

`handle_finalizer` runs before anything else in a reconcile and returns a `Result` when the pass must end
there (the finalizer was just added, or the cluster is being deleted), or None to carry on. Deletion runs
in steps, one per pass, each requeued rather than waited for: delete the pods; wait for the head to go
(10 s); create the cleanup Job; wait for it to finish (2 s polls, Jobs are not watched); remove the
finalizer. A stuck cleanup is cut short after `ray.io/gcs-ft-deletion-timeout` seconds (default 300).

The finalizer is added and removed with a full update carrying the cached resourceVersion, so a write
based on a stale read is refused (409) and retried, never applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import gcsft, rediscleanup
from kuberay.controllers.raycluster.context import (
    DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS,
    HEAD_TERMINATION_REQUEUE_SECONDS,
    SHORT_REQUEUE_SECONDS,
    Context,
)
from kuberay.controllers.raycluster.podwrites import PodWriter
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.controller import Result
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.resources import JOB
from kubesemantics import goparse, times

Obj = Mapping[str, Any]
FINALIZER = constants.GCS_FT_REDIS_CLEANUP_FINALIZER
FINISHED_JOB_CONDITIONS = ("Complete", "Failed", "FailureTarget")


def deletion_timeout(cluster: RayCluster) -> int:
    """`ray.io/gcs-ft-deletion-timeout` in seconds; anything but a positive integer means the default."""
    value = cluster.annotations.get(constants.RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION)
    try:
        seconds = int(value) if value is not None else 0
    except ValueError:
        seconds = 0
    return seconds if seconds > 0 else DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS


def job_finished(job: Obj) -> bool:
    return any(
        c.get("type") in FINISHED_JOB_CONDITIONS and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


async def _set_finalizer(ctx: Context, cluster: RayCluster, present: bool) -> None:
    """Adds or removes the finalizer, on the version read (a conflict fails the pass, as an update would)."""
    finalizers = [f for f in cluster.metadata.finalizers or [] if f != FINALIZER]
    if present:
        finalizers.append(FINALIZER)
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": cluster.metadata.resource_version}}
    await ctx.client.patch(RAYCLUSTER, cluster.name, patch, cluster.namespace)


async def handle_finalizer(ctx: Context, cluster: RayCluster) -> Result | None:
    metadata = cluster.metadata
    spec = cluster.spec.dump()
    deleting = bool(metadata.deletion_timestamp)
    has_finalizer = FINALIZER in (metadata.finalizers or ())
    embedded = gcsft.is_embedded(spec.get("gcsFaultToleranceOptions"))
    if deleting and embedded and has_finalizer:
        await _set_finalizer(ctx, cluster, present=False)
        return Result()
    if not (
        ctx.options.env.gcs_ft_redis_cleanup and gcsft.is_enabled(spec, cluster.annotations) and not embedded
    ):
        return None
    if not deleting:
        if has_finalizer:
            return None
        await _set_finalizer(ctx, cluster, present=True)
        return Result(requeue_after=SHORT_REQUEUE_SECONDS)

    pods = PodWriter(ctx, cluster)
    heads = await pods.delete_all(**{constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE})
    await pods.delete_all(**{constants.RAY_NODE_TYPE_LABEL: constants.WORKER_NODE})
    if heads:
        return Result(requeue_after=HEAD_TERMINATION_REQUEUE_SECONDS)

    namespace, name = cluster.namespace, cluster.name
    jobs = ctx.jobs.list(
        namespace,
        {constants.RAY_CLUSTER_LABEL: name, constants.RAY_NODE_TYPE_LABEL: constants.REDIS_CLEANUP_NODE},
    )
    if has_finalizer:
        age = (ctx.clock.now() - times.parse_time(str(metadata.deletion_timestamp))).total_seconds()
        if age >= deletion_timeout(cluster):
            await _set_finalizer(ctx, cluster, present=False)
            storage = cluster.annotations.get(constants.RAY_EXTERNAL_STORAGE_NS_ANNOTATION, "")
            ctx.event(
                cluster,
                WARNING,
                "ForceDeletedStuckCluster",
                f"Force-removed GCS FT finalizer after {goparse.format_seconds(int(age))} due to Redis cleanup timeout; "
                f'Redis storage namespace "{storage}" may need manual cleanup',
                "Cleanup",
            )
            return Result()
    if jobs:
        if job_finished(jobs[0]):
            await _set_finalizer(ctx, cluster, present=False)
            return Result()
        return Result(requeue_after=SHORT_REQUEUE_SECONDS)

    job = rediscleanup.build_redis_cleanup_job(cluster, ctx.options.pods)
    job_name = job["metadata"]["name"]
    try:
        await ctx.client.create(JOB, job)
    except errors.AlreadyExistsError:
        return Result(requeue_after=SHORT_REQUEUE_SECONDS)
    except errors.KubeError as e:
        ctx.event(
            cluster,
            WARNING,
            "FailedToCreateRedisCleanupJob",
            f"Failed to create Redis cleanup Job {namespace}/{job_name}, {e}",
            "Create",
        )
        raise
    ctx.event(
        cluster,
        NORMAL,
        "CreatedRedisCleanupJob",
        f"Created Redis cleanup Job {namespace}/{job_name}",
        "Create",
    )
    return Result(requeue_after=SHORT_REQUEUE_SECONDS)
