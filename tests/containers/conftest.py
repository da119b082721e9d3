"""The containers backend's tests (issue 47): KubeRay the way a platform team runs it, in containers on a
real kubelet, installed with Helm from our images.

`containerkube` is the backend (tests/support/containerkube.py): the real control plane, a real kubelet on
containerd, kube-proxy and CoreDNS, with the images of scripts/tools/images imported; built once per machine
(`scripts/containerkube build`), started once per run. `operator` is `helm install` of
helm-chart/kuberay-operator with the chart's defaults (image `kuberay:latest`): the operator in a pod, on
its ServiceAccount's token and the chart's RBAC. `cluster` runs kubectl and waits on it as a user would.

Every test here is marked `containers` and runs on one worker (its node id starts with tests/containers/);
the backend is stopped after the last of them, and what it changed on the host is undone then.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from containers.cluster import CRD_DIR, OPERATOR_NS, Cluster
from support import runreport, toolbuild
from support.containerkube import ContainerKube
from support.helm import CHARTS, Helm


@pytest.fixture(scope="session")
def containerkube(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ContainerKube]:
    node_bin, build_seconds = toolbuild.ensure("containerkube")
    realkube_bin, images = toolbuild.built("realkube"), toolbuild.built("images")
    assert realkube_bin is not None and images is not None
    backend = ContainerKube(tmp_path_factory.mktemp("containerkube"), realkube_bin, node_bin, images)
    request.config.pluginmanager.getplugin("support.scheduling").stop_containers_early(backend.stop)
    try:
        backend.start()
        backend.apply_files(sorted(CRD_DIR.glob("*.yaml")))
        timings = ", ".join(f"{what} {seconds:.1f} s" for what, seconds in backend.timings.items())
        runreport.report(f"containerkube: built in {build_seconds:.1f} s; {timings}")
        yield backend
    finally:
        backend.stop()
        runreport.report(f"containerkube: undone on the host: {'; '.join(backend.undone) or 'nothing'}")


@pytest.fixture(scope="session")
def cluster(containerkube: ContainerKube) -> Cluster:
    return Cluster(containerkube)


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own, named after it, deleted (with all in it) after it."""
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-")
    cluster.namespace(name)
    yield name
    cluster.delete_namespace(name)


@pytest.fixture(scope="session")
def operator(cluster: Cluster, helm: Helm) -> Iterator[None]:
    """`helm install kuberay-operator helm-chart/kuberay-operator` with its defaults, once its pod is Ready
    (`Cluster.operator_pod()`; a test may replace the pod)."""
    helm.run(
        "install", "kuberay-operator", str(CHARTS / "kuberay-operator"), "--namespace", OPERATOR_NS,
        "--create-namespace", "--wait", "--timeout", "10m", kubeconfig=cluster.kubeconfig, timeout=660,
    )  # fmt: skip
    cluster.operator_pod()
    yield
    helm.run(
        "uninstall",
        "kuberay-operator",
        "--namespace",
        OPERATOR_NS,
        kubeconfig=cluster.kubeconfig,
        check=False,
    )
