"""Post-completion cleanup: shutdownAfterJobFinishes, legacy onSuccess/onFailure, deletion rules (spec §1.10)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest

from kuberay.controllers.rayjob.decision import Action, ClusterFacts, Facts, Settings
from kuberay.controllers.rayjob.state import step
from unit.controllers.rayjob.jobs import NOW, at, rayjob, running

A = Action
LIVE = ClusterFacts(exists=True)
GONE = ClusterFacts(exists=False)
GOING = ClusterFacts(exists=True, deleting=True)
IDLE = ClusterFacts(exists=True, workers_suspended=True)
LEGACY = {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteWorkers"}}
RULES = {
    "deletionRules": [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 5}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 10}},
        {"policy": "DeleteCluster", "condition": {"jobDeploymentStatus": "Failed", "ttlSeconds": 0}},
    ]
}


def finished(job_status: str = "SUCCEEDED", ended: float = 0, **spec: Any) -> Any:
    deployment = "Failed" if job_status == "FAILED" else "Complete"
    return rayjob(running(jobStatus=job_status, jobDeploymentStatus=deployment, endTime=at(-ended)), **spec)


# (job, cluster, settings, expected actions after STOP_POLLING, expected requeue)
CASES: dict[str, tuple[Any, ClusterFacts, Settings, list[Action], float | None]] = {
    "nothing configured": (finished(), LIVE, Settings(), [], None),
    "shutdown: before the TTL, wait until 2 s after it": (
        finished(ended=3, shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10),
        LIVE,
        Settings(),
        [],
        9.0,
    ),
    "shutdown: TTL passed, delete the cluster": (
        finished(ended=10, shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10),
        LIVE,
        Settings(),
        [A.DELETE_CLUSTER],
        None,
    ),
    "shutdown: applies to failures too": (
        finished("FAILED", shutdownAfterJobFinishes=True),
        LIVE,
        Settings(),
        [A.DELETE_CLUSTER],
        None,
    ),
    "shutdown: cluster already going": (finished(shutdownAfterJobFinishes=True), GOING, Settings(), [], None),
    "shutdown: DELETE_RAYJOB_CR_AFTER_JOB_FINISHES deletes the RayJob": (
        finished(shutdownAfterJobFinishes=True),
        LIVE,
        Settings(delete_rayjob_after_job_finishes=True),
        [A.DELETE_SELF],
        None,
    ),
    "shutdown: clusterSelector touches nothing": (
        finished(shutdownAfterJobFinishes=True, clusterSelector={"ray.io/cluster": "shared"}),
        LIVE,
        Settings(),
        [],
        None,
    ),
    "legacy: success runs onSuccess after the TTL": (
        finished(ended=1, deletionStrategy=LEGACY),
        LIVE,
        Settings(),
        [A.DELETE_CLUSTER],
        None,
    ),
    "legacy: failure runs onFailure": (
        finished("FAILED", deletionStrategy=LEGACY),
        LIVE,
        Settings(),
        [A.SUSPEND_WORKERS],
        None,
    ),
    "legacy: takes precedence over shutdown, with its TTL": (
        finished(deletionStrategy=LEGACY, shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=60),
        LIVE,
        Settings(),
        [],
        62.0,
    ),
    "legacy: STOPPED matches neither policy": (
        finished("STOPPED", deletionStrategy=LEGACY),
        LIVE,
        Settings(),
        [],
        None,
    ),
    "legacy: DeleteNone": (
        finished(
            deletionStrategy={"onSuccess": {"policy": "DeleteNone"}, "onFailure": {"policy": "DeleteNone"}}
        ),
        LIVE,
        Settings(),
        [],
        None,
    ),
    "rules: at end, workers go; cluster rule pending": (
        finished(deletionStrategy=RULES),
        LIVE,
        Settings(),
        [A.SUSPEND_WORKERS],
        7.0,
    ),
    "rules: workers already suspended, wait for the cluster rule": (
        finished(ended=1, deletionStrategy=RULES),
        IDLE,
        Settings(),
        [],
        6.0,
    ),
    "rules: at 5 s the cluster goes": (
        finished(ended=5, deletionStrategy=RULES),
        IDLE,
        Settings(),
        [A.DELETE_CLUSTER],
        7.0,
    ),
    "rules: cluster going, wait for DeleteSelf": (
        finished(ended=6, deletionStrategy=RULES),
        GOING,
        Settings(),
        [],
        6.0,
    ),
    "rules: everything overdue, DeleteSelf first": (
        finished(ended=60, deletionStrategy=RULES),
        LIVE,
        Settings(),
        [A.DELETE_SELF],
        None,
    ),
    "rules: jobDeploymentStatus Failed": (
        finished("FAILED", deletionStrategy=RULES),
        LIVE,
        Settings(),
        [A.DELETE_CLUSTER],
        None,
    ),
    "rules: STOPPED matches no rule": (
        finished("STOPPED", deletionStrategy=RULES),
        LIVE,
        Settings(),
        [],
        None,
    ),
    "rules: clusterSelector short-circuits even DeleteSelf": (
        finished(
            ended=60,
            clusterSelector={"ray.io/cluster": "shared"},
            deletionStrategy={
                "deletionRules": [{"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}}]
            },
        ),
        LIVE,
        Settings(),
        [],
        None,
    ),
    "rules: ties keep the earliest rule": (
        finished(
            deletionStrategy={
                "deletionRules": [
                    {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}},
                    {"policy": "DeleteCluster", "condition": {"jobDeploymentStatus": "Failed"}},
                ]
            }
        ),
        GONE,
        Settings(),
        [],
        None,
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_cleanup(name: str) -> None:
    job, cluster, settings, actions, requeue = CASES[name]
    decision = step(job, Facts(NOW, cluster=cluster), settings, random.Random(0))
    assert decision.actions == [A.STOP_POLLING, *actions]
    assert decision.requeue_after == requeue
    assert not decision.write


def test_the_ttl_counts_from_the_status_end_time() -> None:
    job = finished(ended=0, shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=30)
    before = step(job, Facts(NOW + timedelta(seconds=29), cluster=LIVE), Settings())
    after = step(job, Facts(NOW + timedelta(seconds=30), cluster=LIVE), Settings())
    assert (before.actions, after.actions) == ([A.STOP_POLLING], [A.STOP_POLLING, A.DELETE_CLUSTER])
