"""The collector's event spool stops at its bound, says so once, and recovers (issue 52, item 2)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from kuberay.history.collector.events import EventSpool
from kuberay.history.storage import LocalDirectory
from unit.history.stored import SESSION

BOUND = 4096


def _batch(n: int) -> list[dict[str, object]]:
    return [{"eventType": "NODE_DEFINITION_EVENT", "sessionName": SESSION, "message": "x" * 200}] * n


def _on_disk(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.rglob("*.jsonl"))


def test_the_event_spool_refuses_batches_past_its_bound_says_so_once_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = EventSpool(tmp_path / "spool", lambda: SESSION, BOUND)
    client = TestClient(spool.app())
    codes = []
    with caplog.at_level(logging.INFO, "kuberay.history.collector"):
        for _ in range(20):  # 20 batches of ~2 KiB: ten times the bound
            answer = client.post("/v1/events", json=_batch(8))
            codes.append(answer.status_code)
            assert _on_disk(spool.directory) <= BOUND
        refused = client.post("/v1/events", json=_batch(8))
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        assert "spool full" in refused.text
        accepted = codes.count(200)
        assert 0 < accepted < 20 and codes == [200] * accepted + [503] * (
            20 - accepted
        )  # refuse new, in order
        assert spool.full and spool.used == _on_disk(spool.directory)
        full_lines = [r for r in caplog.records if "spool full" in r.getMessage()]
        assert len(full_lines) == 1  # once, however many batches are refused

        # An upload makes room: the spool takes batches again and says so, once.
        storage = LocalDirectory(tmp_path / "store")
        spool.rotate("node")
        assert spool.upload(storage, lambda session: f"stored/{session}") > 0
        assert spool.used == _on_disk(spool.directory) == 0 and not spool.full
        assert client.post("/v1/events", json=_batch(8)).status_code == 200
    assert len([r for r in caplog.records if "has room again" in r.getMessage()]) == 1
    # Nothing acknowledged was lost to the bound: every accepted batch was stored.
    stored = b"".join(p.read_bytes() for p in (tmp_path / "store").rglob("*.jsonl"))
    assert stored.count(b"\n") == accepted * 8


def test_a_batch_larger_than_the_whole_spool_is_refused_as_too_large(tmp_path: Path) -> None:
    spool = EventSpool(tmp_path / "spool", lambda: SESSION, BOUND)
    answer = TestClient(spool.app()).post("/v1/events", json=_batch(40))
    assert answer.status_code == 413
    assert _on_disk(spool.directory) == 0 and not spool.full


def test_the_spool_counts_what_a_previous_run_left_against_its_bound(tmp_path: Path) -> None:
    first = EventSpool(tmp_path / "spool", lambda: SESSION, BOUND)
    while first.append(_batch(4)) is None:
        pass
    again = EventSpool(tmp_path / "spool", lambda: SESSION, BOUND)  # a restarted collector
    assert again.used == _on_disk(again.directory) and again.append(_batch(4)) == "full"
