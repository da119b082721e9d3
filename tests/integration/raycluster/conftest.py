"""One kuberay-operator process (the real `kuberay-operator` command, every alpha gate a sample needs on)
on each selected backend (`kube_backend`: localkube, realkube), shared by the module's tests; each test works in its own
namespace.

`Kube` wraps the runtime client with the few reads the tests repeat (a RayCluster, its pods, its
services, the Events about it) and `eventually` waits for a condition with a bound, never a sleep as an
assertion.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.resources import EVENT, POD, SERVICE
from support.certmanager_process import CertManager
from support.operator_process import OperatorProcess
from support.shared import yaml_documents

from ..runtime.kube import client_for, new_namespace

SAMPLES = Path(__file__).resolve().parents[3] / ".." / "shared" / "upstream-samples"


RBAC = Path(__file__).resolve().parents[3] / "deploy" / "rbac"


def service_account_kubeconfig(kube_backend: Any, namespace: str, target: Path) -> Path:
    """Installs deploy/rbac (its ServiceAccount in `namespace`, its ClusterRole and binding named after the
    namespace) and writes a kubeconfig at `target` that authenticates as that ServiceAccount."""
    account, role, binding = (
        yaml.safe_load((RBAC / name).read_text())
        for name in ("service_account.yaml", "role.yaml", "role_binding.yaml")
    )
    account["metadata"]["namespace"] = binding["subjects"][0]["namespace"] = namespace
    role["metadata"]["name"] = binding["metadata"]["name"] = binding["roleRef"]["name"] = (
        f"kuberay-{namespace}"
    )
    kube_backend.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
    kube_backend.apply([account, role, binding])
    return kube_backend.service_account_kubeconfig(namespace, account["metadata"]["name"], target)


@pytest.fixture(scope="module")
def cert_manager_installed(
    cert_manager: Path, kube_backend: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CertManager]:
    """The real cert-manager on the backend for one module (tests/support/certmanager_process.py), removed
    after it, so the other modules' operators find no cert-manager."""
    log = tmp_path_factory.mktemp("cert-manager") / "controller.log"
    manager = CertManager.install(cert_manager, kube_backend.kubeconfig, log)
    try:
        yield manager
    finally:
        manager.uninstall()


@pytest.fixture(scope="module")
def operator(kube_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """The operator as deploy/rbac's ServiceAccount with the backend's RBAC enforced: every test of the module
    shows the ClusterRole grants what it needs, and the log must hold no refusal."""
    # RAYCLUSTER_TEST_LOG_DIR keeps the operator's log for a look after the run.
    log_dir = os.environ.get("RAYCLUSTER_TEST_LOG_DIR")
    directory = Path(log_dir) if log_dir else tmp_path_factory.mktemp("operator")
    kubeconfig = service_account_kubeconfig(kube_backend, "kuberay-system", directory / "kubeconfig")
    process = OperatorProcess(kubeconfig, directory / "operator.log").start()
    try:
        yield process
    finally:
        process.stop()
    assert "forbidden" not in (directory / "operator.log").read_text().lower()


class Kube:
    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.namespace = client, namespace

    async def create_cluster(self, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest = {**manifest, "metadata": {**manifest["metadata"], "namespace": self.namespace}}
        return await self.client.create(RAYCLUSTER, manifest)

    async def cluster(self, name: str) -> dict[str, Any]:
        return await self.client.get(RAYCLUSTER, name, self.namespace)

    async def patch_cluster(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return await self.client.patch(RAYCLUSTER, name, patch, self.namespace)

    async def pods(self, cluster: str, **labels: str) -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in {"ray.io/cluster": cluster, **labels}.items())
        found = await self.client.list(POD, self.namespace, label_selector=selector)
        return found.items

    async def live_pods(self, cluster: str, **labels: str) -> list[dict[str, Any]]:
        return [p for p in await self.pods(cluster, **labels) if not p["metadata"].get("deletionTimestamp")]

    async def services(self, cluster: str) -> list[dict[str, Any]]:
        found = await self.client.list(SERVICE, self.namespace)
        return [
            s for s in found.items
            if any(r.get("name") == cluster for r in s["metadata"].get("ownerReferences") or ())
        ]  # fmt: skip

    async def delete_clusters(self) -> None:
        """Deletes the namespace's RayClusters, so later tests sharing the localkube have less to watch."""
        for cluster in (await self.client.list(RAYCLUSTER, self.namespace)).items:
            with contextlib.suppress(errors.NotFoundError):
                await self.client.delete(RAYCLUSTER, cluster["metadata"]["name"], self.namespace)

    async def events(self, name: str) -> list[dict[str, Any]]:
        found = await self.client.list(EVENT, self.namespace)
        return [e for e in found.items if e["involvedObject"].get("name") == name]


@pytest.fixture
async def kube(kube_backend: Any, operator: OperatorProcess) -> AsyncIterator[Kube]:
    client = client_for(kube_backend)
    kube = Kube(client, await new_namespace(client))
    try:
        yield kube
    finally:
        await kube.delete_clusters()
        await client.close()


def load_sample(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml_documents(SAMPLES / name) if doc]
