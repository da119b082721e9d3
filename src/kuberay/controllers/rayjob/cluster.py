"""The RayJob's RayCluster seen from the RayJob: generated names, the cluster a RayJob creates, the dashboard
address of a ready cluster, and why a cluster that is not ready cannot start.

All pure functions of objects already read (cached dicts, models); nothing here calls the API server.

Invariants:
- A constructed cluster copies the RayJob's labels and annotations, adds the origin labels and the
  submission-mode label, and is controlled by the RayJob (so it is garbage-collected with it). Its spec is a
  deep copy of `spec.rayClusterSpec`; in SidecarMode the submitter container is appended to the head
  template, whose restartPolicy becomes `Never`, and the cluster is annotated so the head is not re-made.
- `startup_problem` reports only states a kubelet or scheduler would keep reporting (image pull errors,
  crash loops, unschedulable, a failed pod): never a state a healthy pod passes through.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kuberay.api import constants
from kuberay.api.features import FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayjob import JobSubmissionMode, RayJob
from kuberay.builders import ownership, submitter

# Container waiting reasons that do not go away by waiting (the kubelet keeps retrying, and keeps failing).
STUCK_WAITING_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
# Restarts after which a container that keeps exiting non-zero counts as crash-looping.
CRASH_LOOP_RESTARTS = 2


def random_suffix(rng: random.Random) -> str:
    """Kubernetes' `rand.String(5)`: five characters of the vowel-free alphabet."""
    return "".join(
        rng.choice(constants.RANDOM_SUFFIX_ALPHABET) for _ in range(constants.RANDOM_SUFFIX_LENGTH)
    )


def build_cluster(
    job: RayJob, cluster_name: str, gates: FeatureGates, *, login_shell: bool = False
) -> dict[str, Any]:
    """upstream `constructRayClusterForRayJob`: the RayCluster a RayJob (not in clusterSelector mode) runs on.

    Raises `submitter.SubmitterError` when the SidecarMode submitter cannot be built."""
    if job.spec.ray_cluster_spec is None:
        raise ValueError(
            f"RayJob {job.namespace}/{job.name}: spec.rayClusterSpec is required to create a cluster"
        )
    mode = job.spec.submission_mode
    labels = {
        **job.labels,
        constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL: job.name,
        constants.RAY_ORIGINATED_FROM_CRD_LABEL: constants.RAY_JOB_CRD,
        constants.RAY_JOB_SUBMISSION_MODE_LABEL: mode,
    }
    annotations = dict(job.annotations)
    if mode == JobSubmissionMode.SIDECAR_MODE:
        annotations[constants.DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION] = "true"
    spec = job.spec.ray_cluster_spec.dump()
    cluster = {
        "apiVersion": constants.API_VERSION,
        "kind": "RayCluster",
        "metadata": {
            "name": cluster_name,
            "namespace": job.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": ownership.controlled_by(job),
        },
        "spec": spec,
    }
    if mode == JobSubmissionMode.SIDECAR_MODE:
        model = RayCluster.parse(cluster)
        sidecar = submitter.build_submitter_container(job, model, gates, login_shell=login_shell)
        template = spec["headGroupSpec"].setdefault("template", {})
        pod_spec = template.setdefault("spec", {})
        pod_spec["containers"] = [*(pod_spec.get("containers") or []), sidecar]
        pod_spec["restartPolicy"] = "Never"
    return cluster


def dashboard_address(head_service: Mapping[str, Any] | None, cluster_domain: str) -> str | None:
    """upstream `FetchHeadServiceURL`: `<svc>.<ns>.svc.<domain>:<port>` of the head Service's `dashboard`
    port, without a scheme (as `status.dashboardURL` holds it); None without the Service or the port."""
    if head_service is None:
        return None
    metadata = head_service.get("metadata") or {}
    for port in (head_service.get("spec") or {}).get("ports") or ():
        if port.get("name") == constants.DASHBOARD_PORT_NAME:
            return (
                f"{metadata.get('name')}.{metadata.get('namespace')}.svc.{cluster_domain}:{port.get('port')}"
            )
    return None


def workers_suspended(cluster: Mapping[str, Any]) -> bool:
    """Every worker group has `suspend: true` (what DeleteWorkers leaves behind)."""
    return all(
        group.get("suspend") is True for group in (cluster.get("spec") or {}).get("workerGroupSpecs") or ()
    )


@dataclass(frozen=True)
class StartupProblem:
    """Why a pod of the cluster is not starting, in the kubelet's or scheduler's words."""

    pod: str
    reason: str
    message: str

    def describe(self) -> str:
        return f"pod {self.pod}: {self.reason}" + (f": {self.message}" if self.message else "")


def startup_problem(pods: Iterable[Mapping[str, Any]]) -> StartupProblem | None:
    """The first lasting start-up failure among a cluster's pods (head pods first), if any."""
    ordered = sorted(
        pods,
        key=lambda pod: (
            ((pod.get("metadata") or {}).get("labels") or {}).get(constants.RAY_NODE_TYPE_LABEL)
            != constants.HEAD_NODE,
            (pod.get("metadata") or {}).get("name") or "",
        ),
    )
    for pod in ordered:
        problem = _pod_problem(pod)
        if problem is not None:
            return problem
    return None


def _pod_problem(pod: Mapping[str, Any]) -> StartupProblem | None:
    name = (pod.get("metadata") or {}).get("name") or ""
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        return StartupProblem(name, status.get("reason") or "Failed", status.get("message") or "")
    for condition in status.get("conditions") or ():
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return StartupProblem(name, "Unschedulable", condition.get("message") or "")
    for container_status in [
        *(status.get("initContainerStatuses") or ()),
        *(status.get("containerStatuses") or ()),
    ]:
        waiting = (container_status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_WAITING_REASONS:
            return StartupProblem(
                name,
                waiting["reason"],
                f"container {container_status.get('name')}: {waiting.get('message') or ''}".rstrip(": "),
            )
        # Between two crashes a looping container is briefly running or terminated, not waiting.
        last = (container_status.get("lastState") or {}).get("terminated") or {}
        restarts = int(container_status.get("restartCount") or 0)
        if restarts >= CRASH_LOOP_RESTARTS and last.get("exitCode"):
            return StartupProblem(
                name,
                "CrashLoopBackOff",
                f"container {container_status.get('name')} restarted {restarts} times; last exit code "
                f"{last['exitCode']} ({last.get('reason') or 'Error'})",
            )
    return None
