import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.controllers.raycluster import podstate, recreate, scalegate
from kuberay.controllers.raycluster.podstate import should_delete_pod


def pod(phase: str, policy: str = "Always", terminated: bool = False) -> dict[str, object]:
    state = {"terminated": {"exitCode": 1, "reason": "Error"}} if terminated else {"running": {}}
    return {
        "metadata": {"name": "p"},
        "spec": {"restartPolicy": policy, "containers": [{"name": "ray"}, {"name": "sidecar"}]},
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "sidecar"}, {"name": "ray", "state": state}],
        },
    }


@pytest.mark.parametrize(
    ("p", "delete"),
    [
        (pod("Failed"), True),
        (pod("Succeeded", "Always"), True),
        (pod("Running", "Never", terminated=True), True),
        (pod("Running", "Always", terminated=True), False),  # the kubelet restarts it
        (pod("Running", "Never"), False),
        (pod("Pending", "Never"), False),
    ],
)
def test_should_delete_pod(p: dict[str, object], delete: bool) -> None:
    decided, reason = should_delete_pod(p, "worker")
    assert decided is delete
    assert "worker Pod p" in reason


def test_terminal_reason_is_upstreams_text() -> None:
    _, reason = should_delete_pod(pod("Failed"), "head")
    assert reason == (
        "The head Pod p status is Failed which is a terminal state. "
        "KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."
    )


SPEC = {
    "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray", "image": "ray:1"}]}}},
    "workerGroupSpecs": [
        {
            "groupName": "g",
            "replicas": 1,
            "minReplicas": 0,
            "maxReplicas": 3,
            "template": {"spec": {"containers": [{"name": "ray", "image": "ray:1"}]}},
        }
    ],
    "upgradeStrategy": {"type": "Recreate"},
}


def test_recreate_hash_ignores_scaling_tolerations_and_strategy_but_not_images() -> None:
    base = recreate.spec_hash(SPEC)
    scaled = {
        **SPEC,
        "upgradeStrategy": {"type": "None"},
        "workerGroupSpecs": [
            {
                **SPEC["workerGroupSpecs"][0],  # type: ignore[index]
                "replicas": 3,
                "maxReplicas": 9,
                "scaleStrategy": {
                    "workersToDelete": ["x"],
                    "scaleGate": [{"name": "kueue.k8s.io/quota-exceeded"}],
                },
                "template": {
                    "spec": {"containers": [{"name": "ray", "image": "ray:1"}], "tolerations": [{}]}
                },
            }
        ],
    }
    assert recreate.spec_hash(scaled) == base
    assert len(base) == 32 and set(base) <= set("0123456789ABCDEFGHIJKLMNOPQRSTUV")
    changed = {
        **SPEC,
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray", "image": "ray:2"}]}}},
    }
    assert recreate.spec_hash(changed) != base


@pytest.mark.parametrize(
    ("annotations", "verdict"),
    [
        ({"ray.io/kuberay-version": "nightly", "ray.io/upgrade-strategy-recreate-hash": "H"}, "keep"),
        ({"ray.io/kuberay-version": "nightly", "ray.io/upgrade-strategy-recreate-hash": "OLD"}, "recreate"),
        ({"ray.io/kuberay-version": "v1.4.0", "ray.io/upgrade-strategy-recreate-hash": "OLD"}, "restamp"),
        ({}, "keep"),
    ],
)
def test_head_verdict(annotations: dict[str, str], verdict: str) -> None:
    assert recreate.head_verdict({"metadata": {"annotations": annotations}}, "H") == verdict


@pytest.mark.parametrize(
    ("pod_status", "reason"),
    [
        (
            {
                "containerStatuses": [
                    {"name": "ray", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no"}}}
                ]
            },
            "ImagePullBackOff",
        ),
        (
            {
                "containerStatuses": [
                    {
                        "name": "ray",
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                    }
                ]
            },
            "OOMKilled",
        ),
        (
            {"containerStatuses": [{"name": "ray", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
            "CrashLoopBackOff",
        ),
        (
            {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/1 nodes",
                    }
                ]
            },
            "Unschedulable",
        ),
        ({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}, "Evicted"),
        (
            {"containerStatuses": [{"name": "ray", "state": {"waiting": {"reason": "ContainerCreating"}}}]},
            None,
        ),
    ],
)
def test_pod_problem(pod_status: dict[str, object], reason: str | None) -> None:
    problem = podstate.pod_problem({"metadata": {"name": "w-1"}, "status": pod_status})
    assert (problem.reason if problem else None) == reason
    if problem is not None:
        assert problem.describe("ns").startswith(f"Pod ns/w-1 is failing: {reason}")


def test_scale_gate_holds_only_creation() -> None:
    cluster = RayCluster.parse(
        {
            "metadata": {"name": "c", "namespace": "n"},
            "spec": {
                "headGroupSpec": {"template": {}},
                "workerGroupSpecs": [
                    {"groupName": "gated", "template": {}, "scaleStrategy": {"scaleGate": [{"name": "k/q"}]}},
                    {"groupName": "open", "template": {}, "scaleStrategy": {"scaleGate": []}},
                ],
            },
        }
    )
    gated, open_group = cluster.spec.worker_group_specs or []
    assert scalegate.gates(gated) == ["k/q"] and scalegate.gates(open_group) == []
    assert scalegate.holds_creation(cluster, gated, 2, "why")
    assert not scalegate.holds_creation(cluster, gated, 0, "why")  # nothing to create
    assert not scalegate.holds_creation(cluster, gated, -1, "why")  # scale-down goes on
    assert not scalegate.holds_creation(cluster, open_group, 2, "why")  # an empty list gates nothing
