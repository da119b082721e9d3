"""The real control plane with localkube's node attached (`localkube agent`, simulate mode): kubectl sees the
node Ready, and a Pod is scheduled onto it by kube-scheduler and run by the agent."""

from __future__ import annotations

import subprocess

import pytest

from support.eventually import eventually
from support.realkube_process import NODE_NAME, RealKubeProcess

pytestmark = pytest.mark.realkube


def kubectl(server: RealKubeProcess, *args: str) -> str:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(server.kubeconfig), *args], capture_output=True, text=True, check=True
    ).stdout


def test_kubectl_shows_localkube_node_ready(realkube: RealKubeProcess) -> None:
    rows = [line.split() for line in kubectl(realkube, "get", "nodes", "--no-headers").splitlines()]
    assert [row[:2] for row in rows] == [[NODE_NAME, "Ready"]]


def test_pod_is_scheduled_by_kube_scheduler_and_run_by_the_agent(realkube: RealKubeProcess) -> None:
    kubectl(realkube, "create", "namespace", "node-pods")
    # The namespace's default ServiceAccount comes from the controller-manager; admission needs it first.
    eventually(
        lambda: "default" in kubectl(realkube, "get", "serviceaccounts", "-n", "node-pods", "-o", "name"),
        60,
        "the default ServiceAccount in node-pods",
        every=0.2,
    )
    kubectl(
        realkube,
        "run",
        "sleeper",
        "-n",
        "node-pods",
        "--image=busybox",
        "--restart=Never",
        "--",
        "sleep",
        "600",
    )
    kubectl(realkube, "wait", "pod/sleeper", "-n", "node-pods", "--for=condition=Ready", "--timeout=60s")
    assert (
        kubectl(realkube, "get", "pod", "sleeper", "-n", "node-pods", "-o", "jsonpath={.spec.nodeName}")
        == NODE_NAME
    )
