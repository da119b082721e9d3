"""RayJobSubmissionService: jobs submitted to a running cluster's dashboard, as upstream does it (the head
Service `<cluster>-head-svc`, port 8265, or its `dashboard` port through the API server's proxy)."""

from __future__ import annotations

from typing import Any

import yaml

from kuberay.apiserver import errors
from kuberay.apiserver.backend import Backend, Handler
from kuberay.rayclient.dashboard import (
    DashboardClient,
    DashboardError,
    JobInfo,
    JobNotFound,
    JobSubmitRequest,
)

Object = dict[str, Any]

DASHBOARD_PORT = 8265  # upstream hard-codes it


def _client(backend: Backend, request: Object) -> DashboardClient:
    namespace, cluster = request.get("namespace", ""), request.get("clustername", "")
    if not namespace:
        raise errors.invalid_input("Namespace is empty. Please specify a valid value.")
    if not cluster:
        raise errors.invalid_input("Cluster name is empty. Please specify a valid value.")
    service = f"{cluster}-head-svc"
    direct = f"http://{service}.{namespace}.svc.cluster.local:{DASHBOARD_PORT}"
    base = backend.dashboards.base_url(
        namespace, direct, {"metadata": {"name": cluster, "namespace": namespace}}
    )
    return DashboardClient(backend.dashboards.http, base)


def _submission_id(request: Object) -> str:
    submission = request.get("submissionid", "")
    if not submission:
        raise errors.invalid_input("Submission id is empty. Please specify a valid value.")
    return str(submission)


def _failed(what: str, error: DashboardError) -> errors.UserError:
    return errors.internal(what, error)


def _info(info: JobInfo) -> Object:
    result: Object = {
        "entrypoint": info.entrypoint,
        "job_id": info.job_id or "",
        "submission_id": info.submission_id,
        "status": info.status,
        "message": info.message,
        "error_type": info.error_type or "",
        "start_time": str(info.start_time or 0),
        "end_time": str(info.end_time or 0),
        "metadata": dict(info.metadata),
        "runtime_env": {k: v if isinstance(v, str) else str(v) for k, v in info.runtime_env.items()},
    }
    return result


async def submit_ray_job(backend: Backend, request: Object) -> Object:
    submission = request.get("jobsubmission") or {}
    if not submission.get("entrypoint"):
        raise errors.invalid_input(
            "jobsubmission.entrypoint: the entrypoint is empty. Please specify a valid value."
        )
    dashboard = _client(backend, request)
    runtime_env = None
    if submission.get("runtime_env"):
        try:
            runtime_env = yaml.safe_load(submission["runtime_env"])
        except yaml.YAMLError as e:
            raise errors.invalid_input(f"jobsubmission.runtimeEnv: not valid YAML: {e}") from e
    resources: dict[str, float] = {}
    for name, amount in (submission.get("entrypoint_resources") or {}).items():
        try:
            resources[name] = float(amount)
        except ValueError as e:
            raise errors.invalid_input(
                f"jobsubmission.entrypointResources.{name}: {amount!r} is not a number"
            ) from e
    try:
        submission_id = await dashboard.submit_job(JobSubmitRequest(
            entrypoint=submission["entrypoint"], submission_id=submission.get("submission_id", ""),
            runtime_env=runtime_env, metadata=submission.get("metadata"), entrypoint_resources=resources or None,
            entrypoint_num_cpus=submission.get("entrypoint_num_cpus", 0.0),
            entrypoint_num_gpus=submission.get("entrypoint_num_gpus", 0.0)))  # fmt: skip
    except DashboardError as e:
        raise _failed("Failed to submit job", e) from e
    return {"submission_id": submission_id}


async def get_job_details(backend: Backend, request: Object) -> Object:
    dashboard, submission = _client(backend, request), _submission_id(request)
    try:
        return _info(await dashboard.get_job_info(submission))
    except JobNotFound as e:
        raise errors.not_found(f"Job submission {submission} not found", e) from e
    except DashboardError as e:
        raise _failed("Failed to get job details", e) from e


async def get_job_log(backend: Backend, request: Object) -> Object:
    dashboard, submission = _client(backend, request), _submission_id(request)
    try:
        return {"log": await dashboard.get_job_logs(submission)}
    except DashboardError as e:
        raise _failed("Failed to get job log", e) from e


async def list_job_details(backend: Backend, request: Object) -> Object:
    dashboard = _client(backend, request)
    try:
        return {"submissions": [_info(info) for info in await dashboard.list_jobs()]}
    except DashboardError as e:
        raise _failed("Failed to list jobs", e) from e


async def stop_ray_job(backend: Backend, request: Object) -> Object:
    dashboard, submission = _client(backend, request), _submission_id(request)
    try:
        await dashboard.stop_job(submission)
    except JobNotFound as e:  # as getting it: a job the cluster never had is not found, not a failure
        raise errors.not_found(f"Job submission {submission} not found", e) from e
    except DashboardError as e:
        raise _failed("Failed to stop job", e) from e
    return {}


async def delete_ray_job(backend: Backend, request: Object) -> Object:
    dashboard, submission = _client(backend, request), _submission_id(request)
    try:
        await dashboard.delete_job(submission)
    except DashboardError as e:
        raise _failed("Failed to delete job", e) from e
    return {}


HANDLERS: dict[str, Handler] = {
    "/proto.RayJobSubmissionService/SubmitRayJob": submit_ray_job,
    "/proto.RayJobSubmissionService/GetJobDetails": get_job_details,
    "/proto.RayJobSubmissionService/GetJobLog": get_job_log,
    "/proto.RayJobSubmissionService/ListJobDetails": list_job_details,
    "/proto.RayJobSubmissionService/StopRayJob": stop_ray_job,
    "/proto.RayJobSubmissionService/DeleteRayJob": delete_ray_job,
}
