"""The RayJob's RayCluster seen from the RayJob: the cluster a RayJob creates, and whether its workers are
suspended. (Its generated name suffix is `kubesemantics.names.random_suffix`, its dashboard address
`controllers.dashboards.dashboard_address`, why its pods cannot start `controllers.podproblems`, all shared
with the RayService controller.)

All pure functions of objects already read (cached dicts, models); nothing here calls the API server.

Invariants:
- A constructed cluster copies the RayJob's labels and annotations, adds the origin labels and the
  submission-mode label, and is controlled by the RayJob (so it is garbage-collected with it). Its spec is a
  deep copy of `spec.rayClusterSpec`; in SidecarMode the submitter container is appended to the head
  template, whose restartPolicy becomes `Never`, and the cluster is annotated so the head is not re-made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.features import FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayjob import JobSubmissionMode, RayJob
from kuberay.builders import ownership, submitter


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


def workers_suspended(cluster: Mapping[str, Any]) -> bool:
    """Every worker group has `suspend: true` (what DeleteWorkers leaves behind)."""
    return all(
        group.get("suspend") is True for group in (cluster.get("spec") or {}).get("workerGroupSpecs") or ()
    )
