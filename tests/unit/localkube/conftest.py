"""Shared fixtures for localkube's unit tests: the upstream ray.io CRD schemas, parsed once, and an
in-process cluster (store, REST semantics, every cluster controller) without the HTTP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from localkube.controllers.cluster import cluster_controllers
from localkube.node.kubelet import NodeOptions
from localkube.server.registry import Registry
from localkube.server.rest import SYSTEM_NAMESPACES, Resources
from localkube.storage import Store
from support.shared import UPSTREAM_CRDS, upstream_crd, yaml_documents

# The repository's generated CRDs equal upstream's (tests/unit/api checks that) and are the fallback; upstream's
# are read once per process, for test_crds too.
DEPLOYED_CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"


def _load(name: str) -> dict[str, Any]:
    file_name = f"ray.io_{name}.yaml"
    if (UPSTREAM_CRDS / file_name).exists():
        return upstream_crd(file_name)
    (crd,) = yaml_documents(DEPLOYED_CRDS / file_name)
    assert isinstance(crd, dict)
    return crd


@pytest.fixture(scope="session")
def upstream_crds() -> dict[str, dict[str, Any]]:
    return {name: _load(name) for name in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")}


@pytest.fixture(scope="session")
def raycluster_schema(upstream_crds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    schema: dict[str, Any] = upstream_crds["rayclusters"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Resources]:
    """A fresh store with the system namespaces, served by all of localkube's controllers."""
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    runner = cluster_controllers(resources, NodeOptions())
    await runner.start()
    yield resources
    await runner.stop()
    store.close()
