"""The collector's snapshots of the head's dashboard, against a dashboard answering in process."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from kuberay.history.collector.snapshots import Snapshots
from kuberay.history.storage import LocalDirectory


def test_snapshots_are_stored_under_upstreams_keys_and_the_formatted_status_kept(tmp_path: Path) -> None:
    asked: list[str] = []

    def dashboard(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url.raw_path.decode()))
        return httpx.Response(200, json={"asked": request.url.raw_path.decode()})

    storage = LocalDirectory(tmp_path)
    Snapshots(storage, "http://head:8265", {}, httpx.MockTransport(dashboard)).take("e")

    def stored(key: str) -> str:
        return str(json.loads(storage.get(f"e/{key}"))["asked"])

    # Upstream's key of the placement groups is the frontend's URI, query kept.
    assert stored("restful__api__v0__placement_groups?detail=1&limit=10000") == (
        "/api/v0/placement_groups?detail=1&limit=10000"
    )
    # Both forms of the cluster status, each under its own key.
    assert stored("restful__api__cluster_status") == "/api/cluster_status?format=0"
    assert stored("restful__api__cluster_status?format=1") == "/api/cluster_status?format=1"
