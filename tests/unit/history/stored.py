"""A stored session in the collector's layout, served in process (Starlette's test client): a RayJob's
cluster and a standalone RayCluster, with the answers and log files the tests name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from kuberay.history import layout
from kuberay.history.server.app import HistoryApp
from kuberay.history.server.auth import Token
from kuberay.history.server.cache import ByteCache
from kuberay.history.server.catalog import Catalog
from kuberay.history.storage import LocalDirectory

SESSION = "session_2026-03-01_00-00-00_000001_1"
JOB_CLUSTER = layout.ClusterRef("team-a", "train-abc12", "rayjob", "train")
STANDALONE = layout.ClusterRef("team-a", "plain")
NODE = "ab" * 28


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.storage = LocalDirectory(root)

    def session(self, cluster: layout.ClusterRef, session: str = SESSION) -> None:
        self.storage.put(cluster.metadata_key("", session), b"{}")

    def answer(self, cluster: layout.ClusterRef, key: str, body: Any, session: str = SESSION) -> None:
        """Stores `body` under the endpoint key `key` (`restful__...`) of the session."""
        self.storage.put(f"{cluster.endpoints_dir('', session)}/{key}", json.dumps(body).encode())

    def log(self, cluster: layout.ClusterRef, name: str, body: bytes, node: str = NODE) -> None:
        self.storage.put(f"{cluster.logs_dir('', SESSION, node)}/{name}", body)

    def client(self) -> TestClient:
        catalog = Catalog(self.storage, "", ByteCache(1 << 20), index_ttl=0)
        return TestClient(HistoryApp(catalog, Token(""), None).build())
