"""Fixtures for the reliability drills: a fresh namespace on the session's localkube for each test."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from support.localkube_process import LocalKubeProcess

_counter = itertools.count()


@pytest.fixture
def namespace(localkube: LocalKubeProcess, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace for one test, deleted with its contents afterwards."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())
    name = f"r{next(_counter)}-{slug}"[:63].strip("-")
    with localkube.client(timeout=60) as api:
        api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).raise_for_status()
        yield name
        api.delete(f"/api/v1/namespaces/{name}")
