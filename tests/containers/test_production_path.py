"""The production path on real containers (issue 47): our images on a real kubelet, containerd and runc, the
operator installed with Helm, Ray clusters and jobs from examples/ in containers, reached as users reach
them (cluster DNS, kube-proxy, `kubectl logs/exec/port-forward` through the kubelet).

The tests share the session's operator and run one after another on the backend's worker (its one node has
two CPUs: a cluster at a time), each in its own namespace, deleted after it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from containers.cluster import NEEDS_ROOT, OPERATOR_NS, Cluster
from support.containerkube import POD_CIDR

pytestmark = [NEEDS_ROOT, pytest.mark.containers, pytest.mark.slow, pytest.mark.timeout(1500)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _ready_cluster(cluster: Cluster, name: str, namespace: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        found = cluster.get("raycluster", name, namespace)
        return found if found.get("status", {}).get("state") == "ready" else None

    result: dict[str, Any] = cluster.wait_for(ready, f"RayCluster {namespace}/{name} ready")
    return result


def _pods(cluster: Cluster, namespace: str, cluster_name: str) -> list[dict[str, Any]]:
    return cluster.items("pods", namespace, "-l", f"ray.io/cluster={cluster_name}")


def _head(cluster: Cluster, namespace: str, cluster_name: str) -> dict[str, Any]:
    (head,) = [
        p
        for p in _pods(cluster, namespace, cluster_name)
        if p["metadata"]["labels"]["ray.io/node-type"] == "head"
    ]
    return head


def test_the_helm_installed_operator_runs_in_cluster_on_our_image(cluster: Cluster, operator: None) -> None:
    pod = cluster.operator_pod()
    (container,) = pod["status"]["containerStatuses"]
    assert container["image"] == "docker.io/library/kuberay:latest", container
    assert container["imageID"].startswith("sha256:") or "@sha256:" in container["imageID"], container
    assert container["state"].get("running"), container
    name = pod["metadata"]["name"]
    # The image's user (65532), and the ServiceAccount's token mounted by the kubelet, as on any cluster.
    uid = cluster.kubectl("exec", "-n", OPERATOR_NS, name, "--", "id", "-u").strip()
    assert uid == "65532"
    token_dir = "/var/run/secrets/kubernetes.io/serviceaccount"
    listed = cluster.kubectl("exec", "-n", OPERATOR_NS, name, "--", "ls", token_dir).split()
    assert {"token", "ca.crt", "namespace"} <= set(listed)
    assert pod["spec"]["serviceAccountName"] == "kuberay-operator"
    # It holds the leader Lease under its pod's name.
    lease = cluster.get("lease", "ray-operator-leader", OPERATOR_NS)
    assert lease["spec"]["holderIdentity"].startswith(name), lease["spec"]
    # Metrics through the chart's Service (the API server's port-forward to a pod behind it).
    with cluster.port_forward(OPERATOR_NS, "svc/kuberay-operator", 8080) as port:
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert metrics.status_code == 200
    # The controllers' metrics and KubeRay's own, declared whether or not a cluster exists yet.
    for declared in ("controller_runtime_reconcile_total counter", "kuberay_cluster_info gauge"):
        assert f"# TYPE {declared}" in metrics.text, metrics.text[:1000]
    logs = cluster.kubectl("logs", "-n", OPERATOR_NS, name)
    assert "caches synced" in logs, logs[-2000:]


def test_the_minimal_example_runs_ray_in_containers(cluster: Cluster, operator: None, namespace: str) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
    _ready_cluster(cluster, "minimal", namespace)
    pods = _pods(cluster, namespace, "minimal")
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    for pod in pods:
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(POD_CIDR), pod["status"]
        assert pod["spec"]["nodeName"] == cluster.backend.node_name
    head = _head(cluster, namespace, "minimal")["metadata"]["name"]

    # The worker joined the head through its Service's DNS name, answered by the cluster DNS.
    cluster.wait_for(
        lambda: cluster.ray_nodes_alive(namespace, head) == 2, "two Ray nodes alive", timeout=240
    )
    status = cluster.kubectl("exec", "-n", namespace, head, "-c", "ray-head", "--", "ray", "status")
    # Ray's resources come from the containers' cgroup limits: a CPU each, 2 GiB and 1 GiB of memory.
    assert re.search(r"0\.0/2\.0 CPU", status), status
    assert re.search(r"/3\.00GiB memory", status), status
    resolved = cluster.kubectl(
        "exec", "-n", namespace, head, "-c", "ray-head", "--", "python", "-c",
        f"import socket; print(socket.gethostbyname('minimal-head-svc.{namespace}.svc.cluster.local'))",
    ).strip()  # fmt: skip
    assert ipaddress.ip_address(resolved) in ipaddress.ip_network(
        POD_CIDR
    )  # headless: the head pod's address
    limit = cluster.kubectl(
        "exec", "-n", namespace, head, "-c", "ray-head", "--", "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
    ).strip()  # fmt: skip
    assert int(limit) == 2 * 1024**3
    # The kubelet serves logs and port-forward: the head's `ray start` output, and its dashboard.
    assert "Ray runtime started" in cluster.kubectl("logs", "-n", namespace, head, "-c", "ray-head")
    with cluster.port_forward(namespace, f"pod/{head}", 8265) as port:
        version = httpx.get(f"http://127.0.0.1:{port}/api/version", timeout=10).json()
    assert version["ray_version"] == "2.52.0", version


def test_a_k8s_job_mode_rayjob_succeeds_in_containers(
    cluster: Cluster, operator: None, namespace: str
) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "ray-job.k8s-job-mode.yaml"))

    def ended() -> dict[str, Any] | None:
        status = cluster.get("rayjob", "k8s-job-mode", namespace).get("status", {})
        return status if status.get("jobDeploymentStatus") in ("Complete", "Failed") else None

    status = cluster.wait_for(ended, "the RayJob ended")
    assert status["jobStatus"] == "SUCCEEDED", status
    assert status["jobDeploymentStatus"] == "Complete", status
    # The submitter pod reached the dashboard through the head Service and followed the job's output.
    logs = cluster.kubectl("logs", "-n", namespace, "-l", "job-name=k8s-job-mode", "--tail=-1")
    assert "hello from a RayJob 285" in logs, logs[-3000:]


def test_kubectl_ray_sees_and_reaches_a_cluster_through_the_kubelet(
    cluster: Cluster, operator: None, namespace: str, tmp_path: Path
) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "ray-cluster.minimal.yaml"))
    _ready_cluster(cluster, "minimal", namespace)
    listed = cluster.kubectl("ray", "get", "cluster", "-n", namespace)
    assert re.search(r"^minimal\s", listed, re.MULTILINE), listed
    # `kubectl ray log`: each node's Ray logs, copied out of the containers by the kubelet's exec.
    out = tmp_path / "logs"
    out.mkdir()  # upstream's plugin refuses an --out-dir that is not a directory
    cluster.kubectl("ray", "log", "minimal", "-n", namespace, "--out-dir", str(out), timeout=300)
    head = _head(cluster, namespace, "minimal")["metadata"]["name"]
    assert (out / head / "gcs_server.out").exists() or any(out.rglob("gcs_server*")), sorted(out.rglob("*"))[
        :20
    ]
    # `kubectl ray session`: the dashboard on a local port, forwarded through the kubelet.
    session = subprocess.Popen(
        ["kubectl", "ray", "session", "minimal", "-n", namespace],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "KUBECONFIG": cluster.kubeconfig},
    )  # fmt: skip
    try:

        def dashboard() -> dict[str, Any] | None:
            try:
                return dict(httpx.get("http://127.0.0.1:8265/api/version", timeout=5).json())
            except httpx.HTTPError:
                return None

        version = cluster.wait_for(dashboard, "the dashboard through `kubectl ray session`", timeout=120)
        assert version["ray_version"] == "2.52.0"
    finally:
        # Ended as a user ends it, with Ctrl-C: on SIGTERM it had not ended within 20 s.
        session.send_signal(signal.SIGINT)
        try:
            session.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            session.kill()
            session.communicate()


def test_the_apiserver_chart_answers_its_rest_routes(cluster: Cluster, operator: None, helm: Any) -> None:
    from support.helm import CHARTS

    namespace = "kuberay-apiserver"
    # Without upstream's security proxy (on by default, as upstream's): the routes are the APIServer's own.
    helm.run(
        "install", "kuberay-apiserver", str(CHARTS / "kuberay-apiserver"), "--namespace", namespace,
        "--set", "security=null", "--create-namespace", "--wait", "--timeout", "10m",
        kubeconfig=cluster.kubeconfig, timeout=660,
    )  # fmt: skip
    try:
        with cluster.port_forward(namespace, "svc/kuberay-apiserver-service", 8888) as port:
            base = f"http://127.0.0.1:{port}/apis/v1/namespaces/{namespace}"
            template = {"name": "small", "namespace": namespace, "cpu": 1, "memory": 1}
            created = httpx.post(f"{base}/compute_templates", json=template, timeout=30)
            assert created.status_code == 200, created.text
            listed = httpx.get(f"{base}/compute_templates", timeout=30).json()
            assert [t["name"] for t in listed["computeTemplates"]] == ["small"]
            assert cluster.get("configmap", "small", namespace)["data"]["cpu"] == "1"
            assert httpx.get(f"{base}/clusters", timeout=30).json().get("clusters", []) == []
    finally:
        helm.run(
            "uninstall",
            "kuberay-apiserver",
            "--namespace",
            namespace,
            kubeconfig=cluster.kubeconfig,
            check=False,
        )
        cluster.delete_namespace(namespace)
