"""RayJobs: the API's `RayJob` to the CRD and back, as upstream's APIServer maps them (pure, no I/O)."""

from __future__ import annotations

import re
from typing import Any

from kuberay.apiserver import clusters, errors
from kuberay.rayresources import RAYJOB

Object = dict[str, Any]

SUBMITTER_CPU = "1"
SUBMITTER_MEMORY = "1Gi"
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")


def validate_create(request: Object) -> None:
    job = request.get("job") or {}
    namespace = request.get("namespace", "")
    if not namespace:
        raise errors.invalid_input("Namespace is empty. Please specify a valid value.")
    if namespace != job.get("namespace", ""):
        raise errors.invalid_input(
            "The namespace in the request is different from the namespace in the job definition."
        )
    if not job.get("name"):
        raise errors.invalid_input("Job name is empty. Please specify a valid value.")
    if not job.get("user"):
        raise errors.invalid_input("User who create the job is empty. Please specify a valid value.")
    if job.get("cluster_selector"):
        return
    clusters.validate_spec(job.get("cluster_spec"))


def _submitter(submitter: Object) -> Object:
    quantities = {}
    for key, default in (("cpu", SUBMITTER_CPU), ("memory", SUBMITTER_MEMORY)):
        value = submitter.get(key) or default
        if not _QUANTITY.match(value):
            raise errors.invalid_input(f"job.jobSubmitter.{key}: {value!r} is not a Kubernetes quantity.")
        quantities[key] = value
    container = {"name": "ray-job-submitter", "image": submitter.get("image", ""),
                 "resources": {"limits": dict(quantities), "requests": dict(quantities)}}  # fmt: skip
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def to_rayjob(job: Object, templates: dict[str, Object]) -> Object:
    spec: Object = {
        "entrypoint": job.get("entrypoint", ""),
        "shutdownAfterJobFinishes": job.get("shutdown_after_job_finishes", False),
        "ttlSecondsAfterFinished": job.get("ttl_seconds_after_finished", 0),
    }
    for api_name, crd_name in (("metadata", "metadata"), ("runtime_env", "runtimeEnvYAML"), ("job_id", "jobId"),
                               ("cluster_selector", "clusterSelector"), ("entrypointNumCpus", "entrypointNumCpus"),
                               ("entrypointNumGpus", "entrypointNumGpus"),
                               ("entrypointResources", "entrypointResources"),
                               ("activeDeadlineSeconds", "activeDeadlineSeconds")):  # fmt: skip
        if job.get(api_name):
            spec[crd_name] = job[api_name]
    if job.get("cluster_spec"):
        spec["rayClusterSpec"] = clusters.cluster_spec(
            job.get("version", ""), None, job["cluster_spec"], templates
        )
    if "jobSubmitter" in job:
        spec["submitterPodTemplate"] = _submitter(job["jobSubmitter"])
    labels = {
        clusters.CLUSTER_NAME_LABEL: job["name"],
        clusters.USER_LABEL: job.get("user", ""),
        clusters.APP_NAME_LABEL: clusters.APP_NAME,
        clusters.MANAGED_BY_LABEL: clusters.MANAGED_BY,
    }
    metadata: Object = {"name": job["name"], "namespace": job["namespace"], "labels": labels}
    if job.get("metadata"):
        metadata["annotations"] = dict(job["metadata"])
    return {"apiVersion": RAYJOB.api_version, "kind": RAYJOB.kind, "metadata": metadata, "spec": spec}


def from_rayjob(obj: Object) -> Object:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    cluster_spec = spec.get("rayClusterSpec")
    result: Object = {
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "user": (meta.get("labels") or {}).get(clusters.USER_LABEL, ""),
        "version": (cluster_spec or {}).get("rayVersion", ""),
        "entrypoint": spec.get("entrypoint", ""),
        "metadata": dict(spec.get("metadata") or {}),
        "runtime_env": spec.get("runtimeEnvYAML", ""),
        "job_id": status.get("jobId", ""),
        "shutdown_after_job_finishes": spec.get("shutdownAfterJobFinishes", False),
        "cluster_selector": dict(spec.get("clusterSelector") or {}),
        "ttl_seconds_after_finished": spec.get("ttlSecondsAfterFinished", 0),
        "created_at": meta.get("creationTimestamp"),
        "delete_at": meta.get("deletionTimestamp"),
        "job_status": status.get("jobStatus", ""),
        "job_deployment_status": status.get("jobDeploymentStatus", ""),
        "message": status.get("message", ""),
        "start_time": status.get("startTime"),
        "end_time": status.get("endTime"),
        "ray_cluster_name": status.get("rayClusterName", ""),
        "entrypointNumCpus": spec.get("entrypointNumCpus", 0),
        "entrypointNumGpus": spec.get("entrypointNumGpus", 0),
        "entrypointResources": spec.get("entrypointResources", ""),
        "activeDeadlineSeconds": spec.get("activeDeadlineSeconds", 0),
    }
    if cluster_spec:
        result["cluster_spec"] = clusters.spec_from_crd(cluster_spec)
    submitter = spec.get("submitterPodTemplate")
    if submitter:
        container = ((submitter.get("spec") or {}).get("containers") or [{}])[0]
        limits = (container.get("resources") or {}).get("limits") or {}
        shown: Object = {"image": container.get("image", "")}
        if str(limits.get("cpu", SUBMITTER_CPU)) != SUBMITTER_CPU:
            shown["cpu"] = str(limits["cpu"])
        if str(limits.get("memory", SUBMITTER_MEMORY)) != SUBMITTER_MEMORY:
            shown["memory"] = str(limits["memory"])
        result["jobSubmitter"] = shown
    return {k: v for k, v in result.items() if v not in (None, "", 0, False, {})}
