"""The start-up problems that end a RayJob's Initializing and say why a RayService is not ready."""

from typing import Any

import pytest

from kuberay.controllers.podproblems import startup_problem


def pod(name: str, node_type: str = "head", **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"ray.io/node-type": node_type}}, "status": status}


def waiting(reason: str, message: str = "") -> dict[str, Any]:
    return {"name": "ray-head", "state": {"waiting": {"reason": reason, "message": message}}}


PROBLEMS = {
    "image pull back-off": ([pod("h", containerStatuses=[waiting("ImagePullBackOff", "Back-off pulling")])],
                            ("h", "ImagePullBackOff", "container ray-head: Back-off pulling")),
    "crash loop (waiting)": ([pod("h", containerStatuses=[waiting("CrashLoopBackOff")])],
                             ("h", "CrashLoopBackOff", "container ray-head")),
    "crash loop (between restarts)": (
        [pod("h", containerStatuses=[{"name": "ray-head", "restartCount": 3, "state": {"running": {}},
                                       "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}])],
        ("h", "CrashLoopBackOff", "container ray-head restarted 3 times; last exit code 1 (Error)"),
    ),
    "unschedulable": ([pod("h", conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                             "message": "0/1 nodes are available"}])],
                      ("h", "Unschedulable", "0/1 nodes are available")),
    "failed pod": ([pod("h", phase="Failed", reason="Evicted", message="low memory")], ("h", "Evicted", "low memory")),
    "the head is reported before a worker": (
        [pod("w", "worker", containerStatuses=[waiting("ErrImagePull")]),
         pod("h", containerStatuses=[waiting("ImagePullBackOff")])],
        ("h", "ImagePullBackOff", "container ray-head"),
    ),
    "a slow start is not a problem": ([pod("h", containerStatuses=[waiting("ContainerCreating")])], None),
    "one restart is not a loop": (
        [pod("h", containerStatuses=[{"name": "ray-head", "restartCount": 1,
                                       "lastState": {"terminated": {"exitCode": 1}}}])],
        None,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", PROBLEMS)
def test_startup_problem(name: str) -> None:
    pods, want = PROBLEMS[name]
    problem = startup_problem(pods)
    assert (None if problem is None else (problem.pod, problem.reason, problem.message)) == want
