"""The RayCluster a RayJob makes, and the facts of its submitter."""

from __future__ import annotations

from typing import Any

import pytest

from kuberay.api.features import FeatureGates
from kuberay.controllers.rayjob import cluster, submitter
from unit.controllers.rayjob.jobs import NOW, rayjob


def test_a_constructed_cluster_copies_labels_and_annotations_and_is_controlled_by_the_rayjob() -> None:
    job = rayjob(metadata={"labels": {"team": "a"}, "annotations": {"note": "x"}})
    built = cluster.build_cluster(job, "job-abcde", FeatureGates())
    meta = built["metadata"]
    assert meta["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "job",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/job-submission-mode": "K8sJobMode",
    }
    assert meta["annotations"] == {"note": "x"}
    assert meta["ownerReferences"][0] == {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job",
                                              "uid": "u1", "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    assert built["spec"] == job.spec.ray_cluster_spec.dump()


def test_sidecar_mode_appends_the_submitter_to_the_head_and_never_restarts_it() -> None:
    built = cluster.build_cluster(rayjob(submissionMode="SidecarMode"), "job-abcde", FeatureGates())
    head = built["spec"]["headGroupSpec"]["template"]["spec"]
    assert [c["name"] for c in head["containers"]] == ["ray-head", "ray-job-submitter"]
    assert head["restartPolicy"] == "Never"
    assert built["metadata"]["annotations"] == {"ray.io/disable-provisioned-head-restart": "true"}
    assert "http://127.0.0.1:8265" in head["containers"][1]["args"][0]


def job_object(*conditions: dict[str, Any], deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "job"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    return {"metadata": meta, "status": {"conditions": list(conditions)}}


def test_submitter_job_facts() -> None:
    assert submitter.from_job(None).exists is False
    running = submitter.from_job(job_object())
    assert (running.exists, running.failure, running.finished_at) == (True, None, None)
    failed = submitter.from_job(job_object({"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                            "message": "Job has reached the specified backoff limit",
                                            "lastTransitionTime": "2026-01-01T12:00:00Z"}))  # fmt: skip
    assert failed.failure == (
        "Job submission has failed. Reason: BackoffLimitExceeded. Message: Job has reached the specified backoff limit"
    )
    assert failed.finished_at == NOW
    complete = submitter.from_job(job_object({"type": "Complete", "status": "True",
                                              "lastTransitionTime": "2026-01-01T12:00:00Z"}, deleting=True))  # fmt: skip
    assert (complete.failure, complete.finished_at, complete.deleting) == (None, NOW, True)


def head(*, exit_code: int | None = None, restarts: int = 0, last_exit: int | None = None) -> dict[str, Any]:
    state = {"terminated": {"exitCode": exit_code, "reason": "Error", "finishedAt": "2026-01-01T12:00:00Z"}}
    status: dict[str, Any] = {"name": "ray-job-submitter", "restartCount": restarts,
                              "state": state if exit_code is not None else {"running": {}}}  # fmt: skip
    if last_exit is not None:
        status["lastState"] = {"terminated": {"exitCode": last_exit}}
    return {"metadata": {"name": "h"}, "status": {"containerStatuses": [status]}}


def test_sidecar_facts_without_and_with_the_restart_gate() -> None:
    assert submitter.from_head_pods([], restart_gate=False).head_pod_missing
    failed = submitter.from_head_pods([head(exit_code=2)], restart_gate=False)
    assert failed.failure == "Ray head pod container ray-job-submitter terminated with exit code 2: Error"
    assert failed.finished_at == NOW
    assert submitter.from_head_pods([head(exit_code=0)], restart_gate=False).failure is None
    retrying = submitter.from_head_pods([head(exit_code=1, restarts=1, last_exit=1)], restart_gate=True)
    assert retrying.failure is None
    exhausted = submitter.from_head_pods([head(exit_code=1, restarts=2, last_exit=1)], restart_gate=True)
    assert exhausted.failure == (
        "Ray head pod submitter container ray-job-submitter terminated after exceeding the maximum restart count"
    )
    with pytest.raises(submitter.SubmitterInspectionError, match="more than one head pod"):
        submitter.from_head_pods([head(), head()], restart_gate=False)
