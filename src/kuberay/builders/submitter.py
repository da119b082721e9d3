"""The RayJob submitter: the `ray job submit` shell command, the submitter container, and the Kubernetes Job
that runs it (K8sJobMode) or the head-pod sidecar that runs it (SidecarMode).

Invariants (upstream `common/job.go` and the RayJob controller):

- The command is a list of tokens joined by single spaces and run by `/bin/bash -ce --` (`-cel` with the
  operator's login-shell setting). Tokens, their order and their quoting are upstream's exactly: JSON
  arguments are encoded as Go's `encoding/json` encodes them and quoted by Go's `strconv.Quote`
  (`goformat`), because users' scripts and upstream's tests compare these strings.
- The script first waits for the dashboard's GCS health endpoint. K8sJobMode, and SidecarMode under gate
  `SidecarSubmitterRestart`, may run it more than once, so it asks `ray job status` first, submits with
  `--no-wait` only an unknown job id, and then always follows the logs.
- Environment variables are appended, never merged (`PYTHONUNBUFFERED`, `RAY_DASHBOARD_ADDRESS`,
  `RAY_JOB_SUBMISSION_ID`); token-auth variables are added only when absent (`builders.auth`).
- A user `submitterPodTemplate` is deep-copied; its first container keeps a command the user gave.
- The operator's environment (ENABLE_LOGIN_SHELL) comes in as an argument; nothing here reads it.
"""

from __future__ import annotations

import copy
import re
import struct
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster, RayClusterSpec
from kuberay.api.rayjob import JobSubmissionMode, RayJob
from kuberay.builders import auth, container, goformat, ownership
from kuberay.builders.errors import BuildError
from kubesemantics import goparse

JSON = dict[str, Any]

DEFAULT_BACKOFF_LIMIT = 2
PYTHONUNBUFFERED = "PYTHONUNBUFFERED"
GCS_HEALTH_PATH = "api/gcs_healthz"
GCS_HEALTH_TIMEOUT_SECONDS = 10
HEALTH_COMMAND = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout={timeout}); "
    "exit(0 if b'success' in r.read() else 1)\""
)
# The submitter is small and short-lived; its resources are fixed, as upstream fixes them.
DEFAULT_RESOURCES: JSON = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}
METADATA_MINIMUM_RAY_VERSION = (2, 6, 0)
# Masterminds/semver's lenient form: `v` prefix, minor and patch optional, prerelease and build metadata.
_SEMVER = re.compile(
    r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


class SubmitterError(BuildError):
    """The RayJob cannot be turned into a submitter (mode, runtime env, metadata or Ray version); the
    message is upstream's."""


def build_submit_command(job: RayJob, mode: str, gates: FeatureGates) -> list[str]:
    """`BuildJobSubmitCommand`: the tokens of the submitter's shell script for K8sJobMode or SidecarMode."""
    if mode == JobSubmissionMode.SIDECAR_MODE:
        port = _sidecar_dashboard_port(job)
        address = f"http://{constants.LOCAL_HOST}:{port}"
        health_url = f"http://localhost:{port}/{GCS_HEALTH_PATH}"
    elif mode == JobSubmissionMode.K8S_JOB_MODE:
        address = (job.status.dashboard_url if job.status else None) or ""
        if not address.startswith("http://"):
            address = "http://" + address
        health_url = f"{address}/{GCS_HEALTH_PATH}"
    else:
        raise SubmitterError(f"unsupported submission mode for job submit command: {mode}")

    spec = job.spec
    job_id = (job.status.job_id if job.status else None) or ""
    health = HEALTH_COMMAND.format(url=health_url, timeout=GCS_HEALTH_TIMEOUT_SECONDS)
    waiting = goparse.quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
    tokens = [
        "until",
        health,
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        waiting,
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
    ]

    # A retried submitter (a new Job pod, a restarted sidecar) must not submit the same job id twice.
    check_status = mode == JobSubmissionMode.K8S_JOB_MODE or gates.enabled(Feature.SIDECAR_SUBMITTER_RESTART)
    if check_status:
        tokens += [
            "if",
            "!",
            "ray",
            "job",
            "status",
            "--address",
            address,
            job_id,
            ">/dev/null",
            "2>&1",
            ";",
            "then",
        ]
    tokens += ["ray", "job", "submit", "--address", address]
    if check_status:
        tokens.append("--no-wait")
    if spec.runtime_env_yaml:
        tokens += ["--runtime-env-json", goparse.quote(_runtime_env_json(spec.runtime_env_yaml))]
    if spec.metadata:
        tokens += ["--metadata-json", goparse.quote(_metadata_json(job))]
    if job_id:
        tokens += ["--submission-id", job_id]
    if (cpus := _float32(spec.entrypoint_num_cpus)) > 0:
        tokens += ["--entrypoint-num-cpus", f"{cpus:f}"]
    if (gpus := _float32(spec.entrypoint_num_gpus)) > 0:
        tokens += ["--entrypoint-num-gpus", f"{gpus:f}"]
    if spec.entrypoint_resources:
        tokens += ["--entrypoint-resources", goparse.quote(spec.entrypoint_resources)]
    tokens += ["--", (spec.entrypoint or "").strip(), ";"]
    if check_status:
        tokens += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job_id]
    return tokens


def build_submitter_job(
    job: RayJob, cluster: RayCluster, gates: FeatureGates, *, login_shell: bool = False
) -> JSON:
    """The K8sJobMode submitter: a `batch/v1` Job named and namespaced as the RayJob, controlled by it.

    `cluster` is the RayCluster the job runs on (in clusterSelector mode, the existing one): its head image
    runs the default submitter and its token auth is passed on."""
    config = job.spec.submitter_config
    backoff_limit = (
        config.backoff_limit if config and config.backoff_limit is not None else DEFAULT_BACKOFF_LIMIT
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": _origin_labels(job),
            "ownerReferences": ownership.controlled_by(job),
        },
        "spec": {
            "backoffLimit": backoff_limit,
            "template": build_submitter_pod_template(job, cluster, gates, login_shell=login_shell),
        },
    }


def build_submitter_pod_template(
    job: RayJob, cluster: RayCluster, gates: FeatureGates, *, login_shell: bool = False
) -> JSON:
    """`getSubmitterTemplate`: the user's `submitterPodTemplate` (deep-copied) or the default one, its first
    container configured to submit the job."""
    if job.spec.submitter_pod_template is not None:
        template = copy.deepcopy(job.spec.submitter_pod_template)
    else:
        template = {"spec": {"containers": [_default_container(cluster)], "restartPolicy": "Never"}}
    pod_spec = template.setdefault("spec", {})
    containers = pod_spec.get("containers") or []
    if not containers:
        raise SubmitterError("spec.submitterPodTemplate.spec.containers must contain the submitter container")
    _configure(
        containers[constants.RAY_CONTAINER_INDEX],
        job,
        cluster,
        JobSubmissionMode.K8S_JOB_MODE,
        gates,
        login_shell,
    )
    if auth.is_k8s_token_auth(_auth_options(cluster)):
        auth.add_token_volume(pod_spec)
    metadata = template.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **_origin_labels(job)}
    return template


def build_submitter_container(
    job: RayJob, cluster: RayCluster, gates: FeatureGates, *, login_shell: bool = False
) -> JSON:
    """The SidecarMode submitter, appended by the RayJob controller to the head pod template of the
    RayCluster it constructs (`cluster`). It talks to the dashboard over localhost; under gate
    `SidecarSubmitterRestart` it alone restarts on failure."""
    sidecar = _default_container(cluster)
    _configure(sidecar, job, cluster, JobSubmissionMode.SIDECAR_MODE, gates, login_shell)
    if gates.enabled(Feature.SIDECAR_SUBMITTER_RESTART):
        sidecar["restartPolicy"] = "OnFailure"
    return sidecar


def _configure(
    target: JSON, job: RayJob, cluster: RayCluster, mode: str, gates: FeatureGates, login_shell: bool
) -> None:
    """`configureSubmitterContainer`."""
    tokens = build_submit_command(job, mode, gates)
    if not target.get("command") or mode == JobSubmissionMode.SIDECAR_MODE:
        # -e: stop at the first failing command, so a failed submission fails the container.
        target["command"] = container.shell_command(login_shell, exit_on_error=True)
        target["args"] = [" ".join(tokens)]
    status = job.status
    # Users' own commands read these (e.g. `ray job submit --address=http://$RAY_DASHBOARD_ADDRESS`).
    container.append_env(
        target,
        _env(PYTHONUNBUFFERED, "1"),
        _env(constants.RAY_DASHBOARD_ADDRESS, (status.dashboard_url if status else None) or ""),
        _env(constants.RAY_JOB_SUBMISSION_ID, (status.job_id if status else None) or ""),
    )
    options = _auth_options(cluster)
    if (options or {}).get("mode") == auth.AUTH_MODE_TOKEN:
        auth.set_container_env(cluster.name, target, options)


def _env(name: str, value: str) -> JSON:
    # Go's EnvVar writes no `value` when it is empty (omitempty).
    return {"name": name, "value": value} if value else {"name": name}


def _default_container(cluster: RayCluster) -> JSON:
    """`GetDefaultSubmitterContainer`: the head's image, so the Ray CLI matches the cluster's Ray."""
    head = _head_container(cluster.spec, f"RayCluster {cluster.namespace}/{cluster.name}: spec")
    result: JSON = {"name": constants.SUBMITTER_CONTAINER_NAME}
    if head.get("image"):
        result["image"] = head["image"]
    result["resources"] = copy.deepcopy(DEFAULT_RESOURCES)
    return result


def _origin_labels(job: RayJob) -> dict[str, str]:
    return {
        constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: job.name,
        constants.RAY_ORIGINATED_FROM_CRD_LABEL: constants.RAY_JOB_CRD,
        constants.KUBERNETES_CREATED_BY_LABEL: constants.COMPONENT_NAME,
    }


def _auth_options(cluster: RayCluster) -> dict[str, Any] | None:
    options = cluster.spec.auth_options
    return options.dump() if options is not None else None


def _sidecar_dashboard_port(job: RayJob) -> int:
    cluster_spec = job.spec.ray_cluster_spec
    if cluster_spec is None:
        raise SubmitterError("SidecarMode requires spec.rayClusterSpec")
    head = _head_container(cluster_spec, f"RayJob {job.namespace}/{job.name}: spec.rayClusterSpec")
    return container.port_named(head, constants.DASHBOARD_PORT_NAME, constants.DEFAULT_DASHBOARD_PORT)


def _head_container(cluster_spec: RayClusterSpec, where: str) -> JSON:
    containers = (cluster_spec.head_group_spec.template.get("spec") or {}).get("containers") or []
    if not containers:
        raise SubmitterError(f"{where}.headGroupSpec.template.spec.containers is empty")
    head: JSON = containers[constants.RAY_CONTAINER_INDEX]
    return head


def _runtime_env_json(runtime_env_yaml: str) -> str:
    try:
        return goformat.yaml_to_json(runtime_env_yaml)
    except goformat.GoEncodingError as error:
        raise SubmitterError(str(error)) from error


def _metadata_json(job: RayJob) -> str:
    """`--metadata-json` exists since Ray 2.6.0: an explicit older (or unparsable) `rayVersion` is an error;
    no rayClusterSpec (clusterSelector) or no version is assumed recent enough."""
    cluster_spec = job.spec.ray_cluster_spec
    version = cluster_spec.ray_version if cluster_spec else None
    if version:
        match = _SEMVER.fullmatch(version)
        if match is None:
            raise SubmitterError(f"failed to parse Ray version: {version}: invalid semantic version")
        release = tuple(int(part or 0) for part in match.group(1, 2, 3))
        # A prerelease never satisfies a constraint without one (Masterminds/semver).
        if match.group(4) or release < METADATA_MINIMUM_RAY_VERSION:
            raise SubmitterError("the Ray version must be at least 2.6.0 to use the metadata field")
    return goformat.json(job.spec.metadata or {})


def _float32(value: float | None) -> float:
    """The value as Go's float32 field holds it (formatting then sees the same digits Go sees)."""
    return float(struct.unpack("f", struct.pack("f", value or 0.0))[0])
