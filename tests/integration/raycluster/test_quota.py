"""A RayCluster in a namespace at its ResourceQuota, under the operator, as on a real cluster: the head pod's
create is refused (403, `exceeded quota: ...`), the cluster says so with `ReplicaFailure`
`FailedCreateHeadPod`, and once the quota is raised (`kubectl apply`) the head pod is made, the condition
goes and the cluster becomes ready. `kubectl get quota -o yaml` and `kubectl describe quota` show what is
used; a quota with a negative hard is refused with its field path."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from support.eventually import eventually
from support.operator_process import OperatorProcess

from .conftest import Kube, service_account_kubeconfig
from .test_conditions_beyond_upstream import conditions
from .test_lifecycle import small_cluster, wait_ready_with

if shutil.which("kubectl") is None:
    pytest.skip("kubectl is not on the PATH", allow_module_level=True)

QUOTA = "ray-quota"


@pytest.fixture(scope="module")
def operator(kube_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """The module's operator as in conftest, except that the API server's refusals it logs are the quota's:
    every other `forbidden` would still be an RBAC gap."""
    directory = tmp_path_factory.mktemp("operator")
    kubeconfig = service_account_kubeconfig(kube_backend, "kuberay-system", directory / "kubeconfig")
    process = OperatorProcess(kubeconfig, directory / "operator.log").start()
    try:
        yield process
    finally:
        process.stop()
    refusals = [
        line for line in (directory / "operator.log").read_text().splitlines() if "forbidden" in line.lower()
    ]
    assert all("exceeded quota" in line for line in refusals), refusals


def kubectl(kube_backend: Any, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {**os.environ, "KUBECONFIG": str(kube_backend.kubeconfig)}
    done = subprocess.run(
        ["kubectl", *args], input=input, capture_output=True, text=True, timeout=60, env=env
    )
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
    return done


def quota(namespace: str, pods: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": QUOTA, "namespace": namespace},
            "spec": {"hard": {"pods": pods, "requests.cpu": "2"}},
        }
    )


def used(kube_backend: Any, namespace: str) -> dict[str, Any]:
    found = yaml.safe_load(kubectl(kube_backend, "get", "quota", QUOTA, "-n", namespace, "-o", "yaml").stdout)
    return dict(found.get("status") or {})


async def test_a_cluster_at_its_quota_fails_to_create_its_head_pod_and_heals_when_raised(
    kube: Kube, kube_backend: Any
) -> None:
    namespace = kube.namespace
    kubectl(kube_backend, "apply", "-f", "-", input=quota(namespace, "0"))
    # Admission limits only what the quota controller has published.
    await eventually(
        lambda: used(kube_backend, namespace).get("used") == {"pods": "0", "requests.cpu": "0"}, 30, every=0.2
    )

    await kube.create_cluster(small_cluster("capped", replicas=1))

    async def refused() -> dict[str, Any] | None:
        failure = conditions(await kube.cluster("capped")).get("ReplicaFailure")
        return failure if failure and failure.get("status") == "True" else None

    failure = await eventually(refused)
    assert failure["reason"] == "FailedCreateHeadPod"
    assert f"exceeded quota: {QUOTA}, requested: pods=1, used: pods=0, limited: pods=0" in failure["message"]
    assert "is forbidden" in failure["message"]
    assert await kube.pods("capped") == []

    kubectl(kube_backend, "apply", "-f", "-", input=quota(namespace, "10"))
    await wait_ready_with(kube, "capped", 1)

    async def healed() -> bool:
        return "ReplicaFailure" not in conditions(await kube.cluster("capped"))

    await eventually(healed)
    # The head and the worker, as the quota controller counts them.
    status = await eventually(
        lambda: (s := used(kube_backend, namespace))["used"]["pods"] == "2" and s, 30, every=0.2
    )
    assert status["hard"] == {"pods": "10", "requests.cpu": "2"}
    described = kubectl(kube_backend, "describe", "quota", QUOTA, "-n", namespace).stdout
    rows = {
        line.split()[0]: line.split()[1:]
        for line in described.splitlines()
        if line.startswith(("pods", "requests.cpu"))
    }
    assert rows == {"pods": ["2", "10"], "requests.cpu": [status["used"]["requests.cpu"], "2"]}
    assert status["used"]["requests.cpu"] not in ("0", "")


def test_a_negative_hard_is_refused_with_its_field_path(kube: Kube, kube_backend: Any) -> None:
    bad = quota(kube.namespace, "-1")
    done = kubectl(kube_backend, "apply", "-f", "-", input=bad, check=False)
    assert done.returncode != 0
    assert (
        f'The ResourceQuota "{QUOTA}" is invalid: spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0'
        in done.stderr
    )
    assert kubectl(kube_backend, "get", "quota", "-n", kube.namespace, "-o", "name").stdout == ""
