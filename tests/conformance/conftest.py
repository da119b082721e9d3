"""Fixtures for the conformance tests: the real kubectl, an admin HTTP client and a fresh namespace.

All tests share the session's localkube (see tests/conftest.py); each works in its own namespace.
"""

from __future__ import annotations

import itertools
import re
import shutil
from collections.abc import Iterator

import httpx
import pytest

from conformance.support import ROOT_CA, TESTDATA, Kubectl, run_kubectl
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

_counter = itertools.count()

if shutil.which("kubectl") is None:
    pytest.skip("kubectl is not on the PATH", allow_module_level=True)


@pytest.fixture(scope="session")
def kubectl(localkube: LocalKubeProcess) -> Kubectl:
    """`kubectl(*args, input=None, check=True)` against the session localkube."""
    return lambda *args, **kwargs: run_kubectl(localkube, *args, **kwargs)


@pytest.fixture(scope="session")
def api(localkube: LocalKubeProcess) -> Iterator[httpx.Client]:
    with localkube.client(timeout=30) as client:
        yield client


@pytest.fixture
def namespace(api: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted (with its contents) afterwards. It holds what a real
    cluster's namespaces hold once made (the root CA's ConfigMap), so that no test sees it arrive."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())
    name = f"t{next(_counter)}-{slug}"[:63].strip("-")
    api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).raise_for_status()
    eventually(
        lambda: api.get(f"/api/v1/namespaces/{name}/configmaps/{ROOT_CA}").status_code == 200,
        10,
        f"{ROOT_CA} in {name}",
        every=0.05,
    )
    yield name
    api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture(scope="session")
def third_party_crds(localkube: LocalKubeProcess) -> None:
    localkube.apply_files([TESTDATA / "third-party-crds.yaml"])
