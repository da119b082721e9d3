from fractions import Fraction
from typing import Any

import pytest

from kubesemantics.quantity import QuantityError
from localkube.controllers.scheduling import (
    NodeUsage,
    holds_resources,
    misfit,
    pod_requests,
    unschedulable_message,
)

NODE = {
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "zone": "a"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "3", "nvidia.com/gpu": "1"}},
}


def _pod(requests: dict[str, str] | None = None, phase: str = "Running", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": requests or {}}}
    return {"spec": {"containers": [container], **spec}, "status": {"phase": phase}}


def test_requests_take_the_larger_of_containers_and_init_containers() -> None:
    pod = _pod(
        {"cpu": "1"}, initContainers=[{"name": "i", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]
    )
    assert pod_requests(pod) == {"cpu": Fraction(2), "memory": Fraction(2**30)}


def _usage(*bound: dict[str, Any]) -> NodeUsage:
    usage = NodeUsage()
    for pod in bound:
        if holds_resources(pod):
            usage.add(pod_requests(pod))
    return usage


def test_fits_until_resources_run_out_and_terminated_pods_hold_nothing() -> None:
    bound = _usage(_pod({"cpu": "3"}), _pod({"cpu": "4"}, phase="Succeeded"))
    assert misfit(_pod({"cpu": "1"}), NODE, bound) == []
    assert misfit(_pod({"cpu": "1500m", "nvidia.com/gpu": "2"}), NODE, bound) == [
        "Insufficient cpu",
        "Insufficient nvidia.com/gpu",
    ]
    assert misfit(_pod({"example.com/foo": "1"}), NODE, _usage()) == ["Insufficient example.com/foo"]
    assert misfit(_pod(), NODE, _usage(_pod(), _pod(), _pod())) == ["Too many pods"]
    freed = _usage(_pod({"cpu": "3"}))
    freed.add(pod_requests(_pod({"cpu": "3"})), -1)
    assert misfit(_pod({"cpu": "4"}), NODE, freed) == []


def test_a_nodes_allocatable_counts_alike_as_numbers_or_strings_and_a_boolean_is_refused() -> None:
    numeric = {**NODE, "status": {"allocatable": {"cpu": 4, "pods": 1}}}
    for node in (NODE, numeric, NODE, numeric):  # each twice: a second parse of a string is remembered
        assert misfit(_pod({"cpu": "4"}), node, _usage()) == []
        assert misfit(_pod({"cpu": "4001m"}), node, _usage()) == ["Insufficient cpu"]
    # `True == 1`: had the pods: 1 above been remembered for it, the boolean would pass as one pod.
    boolean = {**NODE, "status": {"allocatable": {"cpu": "1", "pods": True}}}
    with pytest.raises(QuantityError):
        misfit(_pod(), boolean, _usage())


def test_selector_affinity_and_taints() -> None:
    assert misfit(_pod(nodeSelector={"zone": "b"}), NODE, _usage()) == [
        "node(s) didn't match Pod's node affinity/selector"
    ]
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "c"]}]}
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    assert misfit(_pod(affinity=affinity), NODE, _usage()) == []
    tainted = {**NODE, "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}}
    assert misfit(_pod(), tainted, _usage()) == ["node(s) had untolerated taint {gpu: yes}"]
    assert misfit(_pod(tolerations=[{"key": "gpu", "operator": "Exists"}]), tainted, _usage()) == []


def test_unschedulable_message_is_the_schedulers() -> None:
    assert unschedulable_message({"n1": ["Insufficient cpu"]}) == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )
