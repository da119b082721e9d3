"""The APIServer's integration tests: the real `kuberay-operator` and `kuberay-apiserver` commands against
the session's localkube (simulate mode). The APIServer runs as deploy/apiserver's ServiceAccount with its
RBAC, so every test also shows the ClusterRoles grant what it needs; each test works in its own namespace.
Modules whose clusters must become ready use `operator` (pytestmark `usefixtures`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay.runtime.client import Client
from support.apiserver_process import ApiServerProcess
from support.operator_process import OperatorProcess

from ..runtime.kube import client_for, new_namespace

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "apiserver"


def apiserver_kubeconfig(localkube: Any, target: Path) -> Path:
    """deploy/apiserver/rbac.yaml installed, and a kubeconfig at `target` that is its ServiceAccount."""
    objects = list(yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()))
    localkube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ray-system"}}, *objects])
    account = objects[0]["metadata"]
    return localkube.service_account_kubeconfig(account["namespace"], account["name"], target)


@pytest.fixture(scope="module")
def operator(localkube: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """The operator, for the modules whose clusters must become ready (module-scoped: an operator of
    another directory's tests must not find this one still running)."""
    directory = tmp_path_factory.mktemp("operator")
    process = OperatorProcess(Path(localkube.kubeconfig), directory / "operator.log").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="session")
def apiserver_config(localkube: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return apiserver_kubeconfig(localkube, tmp_path_factory.mktemp("apiserver") / "kubeconfig")


@pytest.fixture(scope="session")
def apiserver(apiserver_config: Path) -> Iterator[ApiServerProcess]:
    """One APIServer for the directory's tests (it reconciles nothing, so it may outlive a module)."""
    process = ApiServerProcess(apiserver_config, apiserver_config.parent / "apiserver.log").start()
    try:
        yield process
    finally:
        process.stop()
    assert "forbidden" not in (apiserver_config.parent / "apiserver.log").read_text().lower()


@pytest.fixture
async def kube(localkube: Any) -> AsyncIterator[Client]:
    client = client_for(localkube)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def namespace(kube: Client) -> str:
    return await new_namespace(kube)
