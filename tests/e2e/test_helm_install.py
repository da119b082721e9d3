"""`helm install` of helm-chart/kuberay-operator into localkube, as a platform team installs KubeRay: with
`kuberay local up --node-mode process --no-operator` the chart's Deployment runs the operator as a pod (its
console script, in-cluster config from the mounted ServiceAccount token, the chart's RBAC enforced by the API
server); it brings examples/ray-cluster.minimal.yaml up on real Ray; `helm upgrade` with a feature gate
replaces the running operator with one that has it; `helm uninstall` removes it. Then `kubectl apply -k
deploy/` runs the same operator without Helm.

This needs its own localkube (`--no-operator`): the shared `local_process` runs an operator of its own,
which would reconcile the same RayCluster. It starts real Ray: run it under the shared lock
(`flock /tmp/realray.lock`). Each pod needs its own network namespace, hence root.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.eventually import eventually
from support.helm import CHARTS, Helm
from support.local_instance import EXAMPLES, KUBECTL_POLL, REPO, LocalInstance, kuberay

pytestmark = [
    pytest.mark.slow,
    # Above the test's own bounds (an instance's start, helm's waits): the suite's 300 s fired first under load.
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        os.geteuid() != 0, reason="the operator pod and the Ray pods each need a network namespace"
    ),
]

RELEASE, OPERATOR_NS, RAY_NS = "kuberay-operator", "kuberay-system", "helm-e2e"
# Real Ray and an operator pod on a loaded two-core machine: bounds, not measurements.
READY_TIMEOUT = 420.0
GATE_OFF = [{"name": "RayClusterStatusConditions", "enabled": False}]
GATE_ON = [{"name": "RayClusterStatusConditions", "enabled": True}]


def _values(path: Path, gates: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump({"featureGates": gates}))
    return str(path)


def _operator_pods(local: LocalInstance) -> list[dict[str, Any]]:
    found = json.loads(
        local.kubectl(
            "get", "pods", "-n", OPERATOR_NS, "-l", "app.kubernetes.io/name=kuberay-operator", "-o", "json"
        )
    )
    pods: list[dict[str, Any]] = found["items"]
    return pods


def _running_operator(local: LocalInstance) -> dict[str, Any] | None:
    """The one operator pod, once it is Ready (Recreate: an old one is gone before a new one starts)."""
    pods = [p for p in _operator_pods(local) if not p["metadata"].get("deletionTimestamp")]
    if len(pods) != 1:
        return None
    conditions = {c["type"]: c["status"] for c in pods[0].get("status", {}).get("conditions", [])}
    return pods[0] if conditions.get("Ready") == "True" else None


def _cluster_status(local: LocalInstance) -> dict[str, Any]:
    status: dict[str, Any] = local.get("raycluster", "minimal", RAY_NS).get("status") or {}
    return status


def _allowed(local: LocalInstance, verb: str, resource: str, group: str = "") -> bool:
    """Whether the API server lets the operator's ServiceAccount do this (a SubjectAccessReview)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{OPERATOR_NS}:kuberay-operator",
            "resourceAttributes": {"verb": verb, "resource": resource, "group": group, "namespace": RAY_NS},
        },
    }
    answer = json.loads(local.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review)))
    return bool(answer["status"]["allowed"])


def test_helm_install_upgrade_uninstall(helm: Helm, tmp_path: Path) -> None:
    with LocalInstance(tmp_path / "local", "--node-mode", "process", "--port", "0", "--no-operator") as local:
        kubeconfig = local.kubeconfig
        status = local.status()
        assert status is not None and set(status["children"]) == {"localkube"}
        text = kuberay("local", "status", "--data-dir", str(local.data_dir)).stdout
        assert "operator: none started here (--no-operator)" in text
        chart = str(CHARTS / "kuberay-operator")
        helm.run(
            "install", RELEASE, chart, "--namespace", OPERATOR_NS, "--create-namespace",
            "--values", _values(tmp_path / "off.yaml", GATE_OFF), kubeconfig=kubeconfig,
        )  # fmt: skip
        first = eventually(
            lambda: _running_operator(local), READY_TIMEOUT, "the operator pod Ready", every=KUBECTL_POLL
        )
        (container,) = first["spec"]["containers"]
        assert container["command"] == ["kuberay-operator"]
        assert "--feature-gates=RayClusterStatusConditions=false" in container["args"]
        assert first["spec"]["serviceAccountName"] == "kuberay-operator"
        # The API server holds the operator to the chart's RBAC: what the ClusterRole grants, nothing more.
        assert _allowed(local, "create", "pods") and _allowed(local, "update", "rayclusters/status", "ray.io")
        assert not _allowed(local, "delete", "namespaces") and not _allowed(local, "delete", "secrets")

        local.namespace(RAY_NS)
        local.kubectl("apply", "-n", RAY_NS, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
        eventually(
            lambda: _cluster_status(local).get("state") == "ready",
            READY_TIMEOUT,
            "RayCluster minimal ready",
            every=KUBECTL_POLL,
        )
        assert not _cluster_status(local).get("conditions"), "conditions written with the gate off"

        helm.run(
            "upgrade", RELEASE, chart, "--namespace", OPERATOR_NS,
            "--values", _values(tmp_path / "on.yaml", GATE_ON), kubeconfig=kubeconfig,
        )  # fmt: skip

        def replaced() -> dict[str, Any] | None:
            pod = _running_operator(local)
            return pod if pod and pod["metadata"]["uid"] != first["metadata"]["uid"] else None

        second = eventually(replaced, READY_TIMEOUT, "a new operator pod Ready", every=KUBECTL_POLL)
        assert "--feature-gates=RayClusterStatusConditions=true" in second["spec"]["containers"][0]["args"]

        def provisioned() -> bool:
            conditions = {c["type"]: c["status"] for c in _cluster_status(local).get("conditions") or []}
            return conditions.get("RayClusterProvisioned") == "True"

        eventually(
            provisioned, READY_TIMEOUT, "RayClusterProvisioned from the upgraded operator", every=KUBECTL_POLL
        )

        helm.run("uninstall", RELEASE, "--namespace", OPERATOR_NS, "--wait", kubeconfig=kubeconfig)
        eventually(
            lambda: not _operator_pods(local), READY_TIMEOUT, "the operator pod gone", every=KUBECTL_POLL
        )
        assert not local.kubectl("get", "deployments,services,serviceaccounts", "-n", OPERATOR_NS,
                                 "-l", "app.kubernetes.io/instance=kuberay-operator", "-o", "name").strip()  # fmt: skip
        assert local.kubectl("get", "clusterrole", "kuberay-operator", check=False).strip() == ""
        assert not _allowed(local, "create", "pods")
        # As with upstream's chart, the CRDs (and so the RayCluster) outlive the release.
        assert local.get("raycluster", "minimal", RAY_NS)["metadata"]["name"] == "minimal"

        # The same operator without Helm: `kubectl apply -k deploy/` runs it in ray-system, where it takes
        # the leader Lease through its in-cluster identity and the leader-election Role.
        local.kubectl("apply", "--server-side", "-k", str(REPO / "deploy"))

        def leader() -> str | None:
            lease = local.kubectl(
                "get", "lease", "ray-operator-leader", "-n", "ray-system", "-o", "json", check=False
            )
            return (json.loads(lease)["spec"].get("holderIdentity") or None) if lease else None

        holder = eventually(leader, READY_TIMEOUT, "the deploy/ operator's leader Lease", every=KUBECTL_POLL)
        assert holder.startswith("kuberay-operator-")
        local.kubectl("delete", "raycluster", "minimal", "-n", RAY_NS, "--wait=false")
