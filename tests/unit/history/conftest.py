"""Fixtures over a stored session (tests/unit/history/stored.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from unit.history.stored import JOB_CLUSTER, STANDALONE, Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path)
    store.session(JOB_CLUSTER)
    store.session(STANDALONE)
    store.answer(JOB_CLUSTER, "restful__api__jobs", [])
    return store


@pytest.fixture
def job_client(store: Store) -> Iterator[TestClient]:
    """A client that entered the RayJob's session."""
    with store.client() as client:
        assert client.get("/enter_cluster/team-a/rayjob/train").status_code == 200
        yield client
