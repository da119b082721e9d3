"""The Ray dashboard's HTTP API as the operator uses it: the Jobs API and the Serve API.

One `DashboardClient` talks to one Ray head, either directly (`http://<head-svc>.<ns>.svc.<domain>:8265`,
2 s timeout) or through the Kubernetes API server's service proxy (`--use-kubernetes-proxy`, 10 s), in
which case the caller passes an httpx client that carries the API server's credentials. Requests and
error texts follow upstream KubeRay's dashboard client, so that messages surfaced in status and Events
read the same as upstream's. Paths keep their trailing slashes: the dashboard routes on them.

Nothing here retries or sleeps: a failed call raises and the reconciler decides when to try again.
`DashboardError` (a `kuberay.errors.KubeRayError`) is the root of the package's errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from kuberay.errors import KubeRayError

DIRECT_TIMEOUT = 2.0
PROXY_TIMEOUT = 10.0
AUTH_HEADER = "x-ray-authorization"
DASHBOARD_PORT_NAME = "dashboard"

# Job statuses reported by Ray (`JobStatus` in ray.dashboard.modules.job.common).
TERMINAL_JOB_STATUSES = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})


class DashboardError(KubeRayError):
    """A dashboard call failed; the message reads as upstream's."""


class DashboardTimeout(DashboardError, TimeoutError):
    """A dashboard call ran past the client's deadline. It is still a DashboardError (callers that only
    retry need not care), but a caller can tell "the dashboard is slow" from "the dashboard said no"."""


class JobNotFound(DashboardError):
    """The dashboard has no job with this submission id."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"Job {job_id} does not exist on the cluster")
        self.job_id = job_id


class SubmissionIdInUse(DashboardError):
    """A job with this submission id was submitted before (for example by an earlier reconcile)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"submission ID '{job_id}' already used, Please use a different submission_id")
        self.job_id = job_id


@dataclass(frozen=True)
class JobSubmitRequest:
    """The body of `POST /api/jobs/`; empty fields are left out, as upstream's Go encoding does."""

    entrypoint: str
    submission_id: str = ""
    runtime_env: Mapping[str, Any] | None = None
    metadata: Mapping[str, str] | None = None
    entrypoint_resources: Mapping[str, float] | None = None
    entrypoint_num_cpus: float = 0.0
    entrypoint_num_gpus: float = 0.0

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.runtime_env:
            body["runtime_env"] = dict(self.runtime_env)
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        if self.entrypoint_resources:
            body["entrypoint_resources"] = dict(self.entrypoint_resources)
        body["entrypoint"] = self.entrypoint
        if self.submission_id:
            body["submission_id"] = self.submission_id
        if self.entrypoint_num_cpus:
            body["entrypoint_num_cpus"] = self.entrypoint_num_cpus
        if self.entrypoint_num_gpus:
            body["entrypoint_num_gpus"] = self.entrypoint_num_gpus
        return body


@dataclass(frozen=True)
class JobInfo:
    """What the dashboard reports about one job (times in milliseconds since the epoch)."""

    submission_id: str
    status: str
    message: str = ""
    job_id: str | None = None
    entrypoint: str = ""
    error_type: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    driver_exit_code: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    runtime_env: Mapping[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobInfo:
        return cls(
            submission_id=data.get("submission_id") or "",
            status=data.get("status") or "",
            message=data.get("message") or "",
            job_id=data.get("job_id"),
            entrypoint=data.get("entrypoint") or "",
            error_type=data.get("error_type"),
            start_time=data.get("start_time"),
            end_time=data.get("end_time"),
            driver_exit_code=data.get("driver_exit_code"),
            metadata=data.get("metadata") or {},
            runtime_env=data.get("runtime_env") or {},
        )


@dataclass(frozen=True)
class ServeDeploymentStatus:
    name: str
    status: str
    message: str = ""


@dataclass(frozen=True)
class ServeApplicationStatus:
    name: str
    status: str
    message: str = ""
    deployments: Mapping[str, ServeDeploymentStatus] = field(default_factory=dict)


@dataclass(frozen=True)
class ServeDetails:
    """The declarative Serve applications of one cluster (upstream `ServeDetails`). `deploy_mode` is ""
    when the dashboard does not send it (Ray releases since multi-app became the only mode do not)."""

    applications: Mapping[str, ServeApplicationStatus]
    deploy_mode: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServeDetails:
        applications: dict[str, ServeApplicationStatus] = {}
        for name, app in (data.get("applications") or {}).items():
            deployments = {
                dep_name: ServeDeploymentStatus(dep_name, dep.get("status") or "", dep.get("message") or "")
                for dep_name, dep in (app.get("deployments") or {}).items()
            }
            applications[name] = ServeApplicationStatus(
                name, app.get("status") or "", app.get("message") or "", deployments
            )
        return cls(applications, str(data.get("deploy_mode") or ""))


def dashboard_base_url(head_service: Mapping[str, Any], cluster_domain: str = "cluster.local") -> str:
    """`http://<svc>.<ns>.svc.<domain>:<port>` for a RayCluster's head Service, from its port named
    `dashboard`; DashboardError("dashboard port is not found") without one."""
    metadata = head_service.get("metadata") or {}
    for port in (head_service.get("spec") or {}).get("ports") or []:
        if port.get("name") == DASHBOARD_PORT_NAME:
            host = f"{metadata.get('name')}.{metadata.get('namespace')}.svc.{cluster_domain}"
            return f"http://{host}:{port.get('port')}"
    raise DashboardError("dashboard port is not found")


def proxy_base_url(api_server: str, namespace: str, head_service_name: str) -> str:
    """The API server's service-proxy path to a head Service's dashboard port."""
    return (
        f"{api_server.rstrip('/')}/api/v1/namespaces/{namespace}/services/{head_service_name}:dashboard/proxy"
    )


class DashboardClient:
    """The Jobs and Serve APIs of one Ray head. The httpx client is owned by the caller."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, *, token: str | None = None) -> None:
        self._http = http
        self._base = base_url.rstrip("/")
        self._headers = {AUTH_HEADER: f"Bearer {token}"} if token else {}

    async def _request(
        self, method: str, path: str, *, content: bytes | None = None, params: dict[str, str] | None = None
    ) -> httpx.Response:
        headers = self._headers
        if method in ("POST", "PUT"):
            headers = {**headers, "Content-Type": "application/json"}
        raw = self._base + path
        try:
            url = httpx.URL(raw)
        except httpx.InvalidURL as err:
            raise DashboardError(f"failed to parse dashboard URL: {err}") from err
        if not url.scheme:
            # httpx reads `://host` as a relative URL; Go's url.Parse, upstream's, refuses it.
            raise DashboardError(f'failed to parse dashboard URL: parse "{raw}": missing protocol scheme')
        try:
            return await self._http.request(method, url, headers=headers, content=content, params=params)
        except httpx.TimeoutException as err:
            raise DashboardTimeout(f"{method} {url}: timed out ({type(err).__name__})") from err
        except httpx.HTTPError as err:
            raise DashboardError(f"{method} {url}: {err!r}") from err

    # -- Jobs ---------------------------------------------------------------------------------------------

    async def submit_job(self, request: JobSubmitRequest) -> str:
        """Submits a job; returns its submission id. Raises SubmissionIdInUse when the id was taken."""
        response = await self._request("POST", "/api/jobs/", content=orjson.dumps(request.to_json()))
        if response.status_code == 500 and "Please use a different submission_id" in response.text:
            raise SubmissionIdInUse(request.submission_id)
        _ensure_success(response, "SubmitJob")
        body = _json_or_none(response)
        if not isinstance(body, dict) or "job_id" not in body:
            raise DashboardError(f"SubmitJob fail: {response.text}")
        return str(body.get("submission_id") or body["job_id"])

    async def get_job_info(self, job_id: str) -> JobInfo:
        """The job's status; JobNotFound when the dashboard does not know it (not submitted yet)."""
        response = await self._request("GET", f"/api/jobs/{job_id}")
        if response.status_code == 404:
            raise JobNotFound(job_id)
        # Upstream decodes any JSON answer as job info, so the API server proxy's 503 Status (head not
        # reachable) became a job whose status is "Failure"; an error answer is a failed check here.
        _ensure_success(response, "GetJobInfo")
        body = _json_or_none(response)
        if not isinstance(body, dict):
            raise DashboardError(f"GetJobInfo fail: {response.text}")
        return JobInfo.from_json(body)

    async def list_jobs(self) -> list[JobInfo]:
        response = await self._request("GET", "/api/jobs/")
        if response.status_code == 404:
            return []
        _ensure_success(response, "ListJobs")
        body = _json_or_none(response)
        if not isinstance(body, list):
            raise DashboardError(f"GetJobInfo fail: {response.text}")
        return [JobInfo.from_json(item) for item in body]

    async def get_job_logs(self, job_id: str) -> str:
        """The driver's log so far; empty when the job is unknown."""
        response = await self._request("GET", f"/api/jobs/{job_id}/logs")
        if response.status_code == 404:
            return ""
        _ensure_success(response, "GetJobLog")
        body = _json_or_none(response)
        if not isinstance(body, dict):
            raise DashboardError(f"GetJobLog fail: {response.text}")
        return str(body.get("logs") or "")

    async def stop_job(self, job_id: str) -> None:
        """Stops a job. A job the dashboard would not stop is fine if it has already ended."""
        response = await self._request("POST", f"/api/jobs/{job_id}/stop")
        body = _json_or_none(response)
        if not isinstance(body, dict):
            raise DashboardError(f"StopJob fail: {response.text}")
        if body.get("stopped"):
            return
        info = await self.get_job_info(job_id)
        if not info.terminal:
            raise DashboardError(f"failed to stop job: {job_id} is still {info.status}")

    async def delete_job(self, job_id: str) -> None:
        """Deletes an ended job's record; one already gone is fine. Upstream ignores the answer, so a
        refusal (a job still running, an unreachable job agent) passed for a deletion; it is an error here
        carrying Ray's reason."""
        response = await self._request("DELETE", f"/api/jobs/{job_id}")
        if response.status_code == 404:
            return
        _ensure_success(response, "DeleteJob")
        body = _json_or_none(response)
        if not isinstance(body, dict) or not body.get("deleted"):
            raise DashboardError(f"DeleteJob fail: {response.text}")

    # -- Serve --------------------------------------------------------------------------------------------

    async def get_serve_details(self) -> ServeDetails:
        """Each declarative Serve application's status and its deployments' statuses."""
        response = await self._request("GET", "/api/serve/applications/", params={"api_type": "declarative"})
        _ensure_success(response, "GetServeDetails")
        body = _json_or_none(response)
        if not isinstance(body, dict):
            raise DashboardError(f"GetServeDetails failed. Failed to unmarshal bytes: {response.text}")
        return ServeDetails.from_json(body)

    async def update_serve_applications(self, config: Mapping[str, Any]) -> None:
        """Deploys a Serve config (serveConfigV2 as JSON); sorted keys and compact, as upstream sends it."""
        content = orjson.dumps(config, option=orjson.OPT_SORT_KEYS)
        response = await self._request("PUT", "/api/serve/applications/", content=content)
        _ensure_success(response, "UpdateDeployments")


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return None


def _ensure_success(response: httpx.Response, call: str) -> None:
    if not response.is_success:
        raise DashboardError(
            f"{call} fail: {response.status_code} {response.reason_phrase} {_reason(response.text)}"
        )


def _reason(text: str) -> str:
    """The dashboard's answer, or of a Python traceback it sent (a refusal raised in its job agent) the last
    exception line: the reason, without a page of frames around it."""
    if "Traceback (most recent call last)" not in text:
        return text
    raised = [line for line in text.splitlines() if line[:1].isalpha() and ": " in line]
    return raised[-1] if raised else text
