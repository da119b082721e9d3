"""Shared fixtures for localkube's pure unit tests: the upstream ray.io CRD schemas, parsed once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

# The repository's generated CRDs equal upstream's (tests/unit/api checks that); upstream's are the fallback.
DEPLOYED_CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"
UPSTREAM_CRDS = Path("/work/shared/upstream-crds")


def _load(name: str) -> dict[str, Any]:
    path = DEPLOYED_CRDS / f"ray.io_{name}.yaml"
    with (path if path.exists() else UPSTREAM_CRDS / path.name).open() as f:
        crd: dict[str, Any] = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return crd


@pytest.fixture(scope="session")
def upstream_crds() -> dict[str, dict[str, Any]]:
    return {name: _load(name) for name in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")}


@pytest.fixture(scope="session")
def raycluster_schema(upstream_crds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    schema: dict[str, Any] = upstream_crds["rayclusters"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema
