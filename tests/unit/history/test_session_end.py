"""The end-of-session record (issue 49, item 3): its shape in the layout, and the server's answer of it for
the entered session, which says whether the session is complete."""

from __future__ import annotations

import asyncio
import datetime
import json

import pytest
from starlette.testclient import TestClient

from kuberay.history import layout
from kuberay.history.server.cache import ByteCache
from kuberay.history.server.catalog import Catalog, StoredSession
from unit.history.stored import JOB_CLUSTER, NODE, SESSION, Store

ENDED = datetime.datetime(2026, 3, 1, 0, 5, 6, tzinfo=datetime.UTC)
SNAPSHOT = {"succeeded": True, "unanswered": []}


def test_the_record_sits_beside_the_node_directories_and_names_how_the_session_ended() -> None:
    assert JOB_CLUSTER.session_end_key("root", SESSION) == (
        f"root/cluster-history/rayjob/team-a/train/train-abc12/{SESSION}/session_end.json"
    )
    assert layout.session_end(SESSION, ENDED, "preStop", SNAPSHOT, "done") == {
        "sessionName": SESSION, "endTime": "2026-03-01T00:05:06Z", "endTimeStamp": int(ENDED.timestamp()),
        "reason": "preStop", "finalSnapshot": SNAPSHOT, "finalUpload": "done",
    }  # fmt: skip
    for bad in (("kill", "done"), ("SIGTERM", "later")):
        with pytest.raises(layout.LayoutError):
            layout.session_end(SESSION, ENDED, bad[0], None, bad[1])


def _record(store: Store, snapshot: object, final_upload: str) -> None:
    body = layout.session_end(SESSION, ENDED, "SIGTERM", snapshot, final_upload)  # type: ignore[arg-type]
    store.storage.put(JOB_CLUSTER.session_end_key("", SESSION), json.dumps(body).encode())


def test_a_session_is_complete_once_its_final_snapshot_and_upload_are_done(
    store: Store, job_client: TestClient
) -> None:
    missing = job_client.get("/api/history/session_end")
    assert missing.status_code == 404 and "still running" in missing.text
    _record(store, SNAPSHOT, "pending")
    assert job_client.get("/api/history/session_end").json()["complete"] is False
    _record(store, SNAPSHOT, "done")  # written again when the upload is over: not served from a cache
    answer = job_client.get("/api/history/session_end").json()
    assert (
        answer["complete"] is True and answer["reason"] == "SIGTERM" and answer["finalSnapshot"] == SNAPSHOT
    )
    _record(store, {"succeeded": False, "unanswered": ["/api/jobs/"]}, "done")
    assert job_client.get("/api/history/session_end").json()["complete"] is False


def test_the_record_is_no_node_and_an_unreadable_one_is_none(store: Store, job_client: TestClient) -> None:
    store.log(JOB_CLUSTER, "raylet.out", b"x\n")
    _record(store, SNAPSHOT, "done")
    catalog = Catalog(store.storage, "", ByteCache(1 << 20))
    assert asyncio.run(catalog.nodes_with_logs(StoredSession(JOB_CLUSTER, SESSION))) == [NODE]
    store.storage.put(JOB_CLUSTER.session_end_key("", SESSION), b"[not json")
    assert job_client.get("/api/history/session_end").status_code == 404
