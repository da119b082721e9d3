"""Status transitions as golden files: `<case>.input.yaml` holds the RayCluster, its pods and head
services, and the reconcile error (`error: {reason, message}` for a ReplicaFailure, a string for another
error, absent for none); `<case>.output.yaml` the status `calculate_status` returns, or `{error: ...}`."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.controllers.raycluster import status
from support import golden

DIRECTORY = Path(__file__).with_name("testdata")
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def calculate(case: dict[str, Any]) -> dict[str, Any]:
    error = case.get("error")
    reconcile_error: BaseException | None = None
    if isinstance(error, dict):
        reconcile_error = status.ReplicaFailureError(error["reason"], error["message"])
    elif isinstance(error, str):
        reconcile_error = RuntimeError(error)
    try:
        return status.calculate_status(
            RayCluster.parse(case["cluster"]),
            case.get("pods") or [],
            case.get("services") or [],
            reconcile_error=reconcile_error,
            conditions_enabled=case.get("conditions", True),
            now=NOW,
        )
    except status.StatusError as e:
        return {"error": str(e)}


@pytest.mark.parametrize("case", golden.cases(DIRECTORY), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), calculate(golden.load(case)))


def test_only_compared_fields_trigger_a_write() -> None:
    case = golden.load(DIRECTORY / "ready.input.yaml")
    first = calculate(case)
    again = calculate({**case, "cluster": {**case["cluster"], "status": first}})
    assert again["lastUpdateTime"] == first["lastUpdateTime"]  # same clock, but it would not matter:
    assert not status.status_changed(first, {**again, "lastUpdateTime": "later", "observedGeneration": 9})
    assert status.status_changed(first, {**again, "readyWorkerReplicas": 0})
