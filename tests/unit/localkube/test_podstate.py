"""What the workload controllers read off a pod: active, ready, and available after minReadySeconds."""

import datetime
from typing import Any

import pytest

from localkube.controllers import podstate

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def _pod(phase: str = "Running", ready_since: str | None = None, deleting: bool = False) -> dict[str, Any]:
    conditions = (
        [{"type": "Ready", "status": "True", "lastTransitionTime": ready_since}] if ready_since else []
    )
    metadata: dict[str, Any] = {"name": "p"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    return {"metadata": metadata, "status": {"phase": phase, "conditions": conditions}}


@pytest.mark.parametrize(
    ("pod", "min_ready", "expected"),
    [
        (_pod(ready_since="2026-01-01T11:59:50Z"), 0, 0.0),
        (_pod(ready_since="2026-01-01T11:59:50Z"), 10, 0.0),  # exactly long enough
        (_pod(ready_since="2026-01-01T11:59:50Z"), 30, 20.0),
        (_pod(ready_since="2026-01-01T12:00:00Z"), 5, 5.0),
        (_pod(), 0, None),  # not ready: no wait makes it available
        (_pod(ready_since="2026-01-01T11:00:00Z", deleting=True), 0, None),  # terminating
        (_pod(phase="Succeeded", ready_since="2026-01-01T11:00:00Z"), 0, None),  # finished
    ],
)
def test_available_in(pod: dict[str, Any], min_ready: int, expected: float | None) -> None:
    assert podstate.available_in(pod, min_ready, NOW) == expected
    assert podstate.available(pod, min_ready, NOW) is (expected == 0.0)


@pytest.mark.parametrize(
    ("pod", "active"),
    [
        (_pod(), True),
        (_pod(phase="Pending"), True),
        (_pod(deleting=True), False),
        (_pod(phase="Failed"), False),
    ],
)
def test_active(pod: dict[str, Any], active: bool) -> None:
    assert podstate.active(pod) is active
