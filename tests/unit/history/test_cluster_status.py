"""`/api/cluster_status` of a stored session: `format=1` is the text Ray's frontend splits, never the dict."""

from __future__ import annotations

import copy
import datetime
import time
from typing import Any

import pytest
from starlette.testclient import TestClient

from unit.history.stored import JOB_CLUSTER, Store

# The v1 autoscaler's state as Ray keeps it (`format=0`'s `clusterStatus`), touching every part of the text.
STATUS: dict[str, Any] = {
    "time": 1772323260.25,
    "load_metrics_report": {
        "usage": {"CPU": [3.0, 4.0], "memory": [0.0, 8e9], "object_store_memory": [1e6, 2e9],
                  "node:10.0.0.5": [0.0, 1.0], "CPU_group_abc123": [1.0, 2.0], "CPU_group_0_abc123": [1.0, 1.0],
                  "accelerator_type:A100": [0.0, 1.0]},
        "resource_demand": [[{"CPU": 1.0}, 3], [{"CPU_group_abc123": 1.0, "bundle_group_abc123": 0.001}, 2]],
        "pg_demand": [[{"strategy": "PACK", "bundles": [[{"GPU": 1.0}, 2]]}, 1]],
        "request_demand": [[{"CPU": 8.0}, 1]],
        "node_types": [],
    },
    "autoscaler_report": {
        "active_nodes": {"headgroup": 1}, "idle_nodes": {"workers": 2},
        "pending_nodes": [["10.0.0.9", "workers", "SETTING-UP"]], "pending_launches": {"workers": 1},
        "failed_nodes": [["10.0.0.7", "workers"]],
        "node_availability_summary": {"node_availabilities": {"gpu": {
            "node_type": "gpu", "is_available": False, "last_checked_timestamp": 1772323200.5,
            "unavailable_node_information": {"category": "LaunchFailed", "description": "quota"}}}},
    },
}  # fmt: skip
FORMAT0 = {"result": True, "msg": "Got cluster status.",
           "data": {"autoscalingStatus": None, "autoscalingError": "boom", "clusterStatus": STATUS}}  # fmt: skip


def _rays_text(status: dict[str, Any]) -> str:
    """Ray's own text of `status`, made as Ray's `debug_status` makes it for the v1 autoscaler."""
    util = pytest.importorskip("ray.autoscaler._private.util")
    from ray.autoscaler._private.autoscaler import AutoscalerSummary
    from ray.autoscaler._private.node_provider_availability_tracker import NodeAvailabilitySummary

    status = copy.deepcopy(status)
    scaler = status["autoscaler_report"]
    availability = NodeAvailabilitySummary.from_fields(**scaler.pop("node_availability_summary"))
    return str(
        util.format_info_string(
            util.LoadMetricsSummary(**status["load_metrics_report"]),
            AutoscalerSummary(node_availability_summary=availability, **scaler),
            time=datetime.datetime.fromtimestamp(status["time"]),
        )
    )


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray formats times in local time; the pod's is UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def test_format_1_is_rays_stored_text(store: Store, job_client: TestClient) -> None:
    store.answer(JOB_CLUSTER, "restful__api__cluster_status", FORMAT0)
    text = {
        "result": True,
        "msg": "Got formatted cluster status.",
        "data": {"clusterStatus": "Node status\nx"},
    }
    store.answer(JOB_CLUSTER, "restful__api__cluster_status?format=1", text)
    assert job_client.get("/api/cluster_status", params={"format": "1"}).json() == text
    assert job_client.get("/api/cluster_status", params={"format": "0"}).json() == FORMAT0


def test_format_1_of_a_session_that_stored_only_format_0_is_made_as_ray_makes_it(
    store: Store, job_client: TestClient, utc: None
) -> None:
    store.answer(JOB_CLUSTER, "restful__api__cluster_status", FORMAT0)
    served = job_client.get("/api/cluster_status", params={"format": "1"}).json()
    assert served["msg"] == "Got formatted cluster status."
    assert served["data"]["clusterStatus"] == _rays_text(STATUS) + "\nboom"


def test_a_session_without_a_cluster_status_answers_rays_empty_forms(job_client: TestClient) -> None:
    formatted = job_client.get("/api/cluster_status", params={"format": "1"}).json()["data"]["clusterStatus"]
    assert isinstance(formatted, str) and formatted.startswith("No cluster status.")
    assert job_client.get("/api/cluster_status").json()["data"] == {
        "autoscalingStatus": None, "autoscalingError": None, "clusterStatus": None}  # fmt: skip
