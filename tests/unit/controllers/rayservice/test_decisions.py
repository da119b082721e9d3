"""The RayService controller's pure decisions: the spec hash and in-place updates, status conditions and
the write rule, Serve's failure text, and the incremental upgrade's weights and capacity steps."""

from __future__ import annotations

import copy
import types
import typing
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from kuberay.api.raycluster import RayClusterSpec
from kuberay.api.rayservice import ClusterUpgradeOptions
from kuberay.controllers.raycluster.recreate import OMITEMPTY
from kuberay.controllers.rayservice import clusters, incremental
from kuberay.controllers.rayservice import status as st
from kuberay.controllers.rayservice.context import ServeConfigCache
from kuberay.controllers.rayservice.serving import (
    ServeOutcome,
    ServeUpdateError,
    config_body,
    reconcile_serve,
)
from kuberay.rayclient.dashboard import DashboardClient, DashboardError

HASH = "ray.io/hash-without-replicas-and-workers-to-delete"
NOW = "2026-01-01T00:00:00Z"


def spec(groups: int = 1) -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "h", "image": "i"}]}}},
        "workerGroupSpecs": [
            {"groupName": f"g{i}", "replicas": 1, "minReplicas": 0, "maxReplicas": 3, "rayStartParams": {},
             "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}}
            for i in range(groups)
        ],
    }  # fmt: skip


def stamped(goal: dict[str, Any]) -> dict[str, Any]:
    annotations = {
        HASH: clusters.cluster_hash(goal),
        "ray.io/num-worker-groups": str(len(goal["workerGroupSpecs"])),
    }
    return {"metadata": {"annotations": annotations}}


def test_replicas_and_suspend_do_not_change_the_hash_but_the_template_does() -> None:
    goal = spec()
    scaled = copy.deepcopy(goal)
    scaled["workerGroupSpecs"][0].update(replicas=3, minReplicas=1, maxReplicas=9)
    scaled["suspend"] = True
    assert clusters.cluster_hash(scaled) == clusters.cluster_hash(goal)
    changed = copy.deepcopy(goal)
    changed["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    assert clusters.cluster_hash(changed) != clusters.cluster_hash(goal)


def test_appended_worker_groups_update_in_place_and_removed_ones_do_not() -> None:
    cluster = stamped(spec(2))
    assert not clusters.should_update_in_place(cluster, spec(2))
    assert clusters.should_update_in_place(cluster, spec(3))
    assert not clusters.partial_hash_equal(cluster, spec(1))
    changed = spec(3)
    changed["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "other"
    assert not clusters.should_update_in_place(cluster, changed)


def _bare(annotation: Any) -> Any:
    """The type inside Optional[...] and Annotated[...]."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:
            return annotation


def _field_type(model: type[BaseModel], alias: str) -> Any:
    [field] = [f for name, f in model.model_fields.items() if (f.alias or name) == alias]
    return _bare(field.annotation)


def _holder_type(path: tuple[str, ...]) -> type[BaseModel]:
    current: Any = RayClusterSpec
    for step in path:
        current = _bare(typing.get_args(current)[0]) if step == "*" else _field_type(current, step)
    assert isinstance(current, type) and issubclass(current, BaseModel), path
    return current


def _with_holder(goal: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """The holder at `path` in `goal`, made (with a list of one item for "*") where missing."""
    holder: Any = goal
    for step, after in zip(path, (*path[1:], None), strict=False):
        if step == "*":
            holder = holder[0]
        elif after == "*":
            holder = holder.setdefault(step, [{"groupName": "g0"}])
        else:
            holder = holder.setdefault(step, {})
    return typing.cast(dict[str, Any], holder)


OMITTED = [(path, name) for path, names in OMITEMPTY.items() for name in sorted(names)]


@pytest.mark.parametrize(("path", "name"), OMITTED, ids=[".".join((*p, n)) for p, n in OMITTED])
def test_an_omitempty_field_empty_hashes_as_missing(path: tuple[str, ...], name: str) -> None:
    declared = _field_type(_holder_type(path), name)
    kind = typing.get_origin(declared) or declared
    kind = str if kind is typing.Literal or (isinstance(kind, type) and issubclass(kind, str)) else kind
    empty, full = {str: ("", "x"), int: (0, 2), list: ([], [{"name": "x"}]), dict: ({}, {"k": "v"})}[kind]
    missing = spec()
    _with_holder(missing, path).pop(name, None)
    for value, same in ((empty, True), (full, False)):
        given = copy.deepcopy(missing)
        _with_holder(given, path)[name] = value
        assert (clusters.cluster_hash(given) == clusters.cluster_hash(missing)) is same, value


def test_a_pointer_field_false_is_not_missing() -> None:
    for path, name in (((), "enableInTreeAutoscaling"), (("headGroupSpec",), "enableIngress")):
        given = spec()
        _with_holder(given, path)[name] = False
        assert clusters.cluster_hash(given) != clusters.cluster_hash(spec()), name


def test_an_unreadable_group_count_counts_as_equal() -> None:
    assert clusters.partial_hash_equal(
        {"metadata": {"annotations": {"ray.io/num-worker-groups": "x"}}}, spec()
    )


def test_first_pass_conditions_and_the_ready_transitions() -> None:
    status: dict[str, Any] = {"numServeEndpoints": 0}
    st.set_conditions(status, NOW, why_not_ready="RayCluster c: pod p: ImagePullBackOff")
    ready = st.condition(status, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "Initializing")
    assert ready["message"] == "RayService is initializing: RayCluster c: pod p: ImagePullBackOff"
    status.update(numServeEndpoints=2, activeServiceStatus={"rayClusterName": "a"})
    st.set_conditions(status, "2026-01-01T00:01:00Z")
    ready = st.condition(status, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("True", "NonZeroServeEndpoints")
    assert status["serviceStatus"] == "Running"
    upgrade = st.condition(status, "UpgradeInProgress")
    assert upgrade is not None and (upgrade["status"], upgrade["reason"]) == ("False", "NoPendingCluster")
    status.update(numServeEndpoints=0, pendingServiceStatus={"rayClusterName": "p"})
    st.set_conditions(status, "2026-01-01T00:02:00Z", why_pending_not_ready="RayCluster p: boom")
    ready = st.condition(status, "Ready")
    assert ready is not None and (ready["reason"], ready["lastTransitionTime"]) == (
        "ZeroServeEndpoints",
        "2026-01-01T00:02:00Z",
    )
    upgrade = st.condition(status, "UpgradeInProgress")
    assert (
        upgrade is not None
        and upgrade["message"] == "Both active and pending Ray clusters exist: RayCluster p: boom"
    )
    assert status["serviceStatus"] == ""


def test_cluster_statuses_and_update_time_alone_do_not_make_a_write() -> None:
    old = {
        "numServeEndpoints": 1,
        "activeServiceStatus": {"rayClusterName": "a", "rayClusterStatus": {"state": "x"}},
    }
    new = copy.deepcopy(old)
    new["activeServiceStatus"]["rayClusterStatus"] = {"state": "ready"}
    new["lastUpdateTime"] = NOW
    assert not st.changed(old, new)
    new["numServeEndpoints"] = 2
    assert st.changed(old, new)


def test_serve_endpoints_are_distinct_ready_pods() -> None:
    slices = [
        {"endpoints": [{"conditions": {"ready": True}, "targetRef": {"uid": "1"}},
                       {"conditions": {"ready": False}, "targetRef": {"uid": "2"}}]},
        {"endpoints": [{"conditions": {"ready": True}, "targetRef": {"uid": "1"}}]},
    ]  # fmt: skip
    assert st.serve_endpoints(slices) == 1


def test_serves_own_words_for_a_failed_application() -> None:
    outcome = ServeOutcome(
        ready=False,
        applications={
            "ok": {"status": "RUNNING"},
            "bad": {"status": "DEPLOY_FAILED", "message": "ImportError: no module x",
                    "serveDeploymentStatuses": {"D": {"status": "UNHEALTHY", "message": "replica died"}}},
        },
    )  # fmt: skip
    assert (
        outcome.failure()
        == "application bad is DEPLOY_FAILED: ImportError: no module x; deployment D: replica died"
    )
    assert ServeOutcome(ready=False, applications={"a": {"status": "DEPLOYING"}}).failure() == ""


def test_the_put_body_is_the_yaml_as_json_with_target_capacity() -> None:
    assert config_body("applications: []", 40) == {"applications": [], "target_capacity": 40}
    assert config_body("") == {}
    with pytest.raises(DashboardError, match="failed to unmarshal serveConfigV2"):
        config_body("- a list")


def dashboard(*, get: int = 200, put: int = 200) -> DashboardClient:
    """A dashboard with no Serve application yet that answers GET and PUT with the given codes."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(get, json={"applications": {}})
        return httpx.Response(put, text="no")

    return DashboardClient(httpx.AsyncClient(transport=httpx.MockTransport(answer)), "http://head:8265")


async def test_only_a_failed_submission_is_a_serve_update_error() -> None:
    # The controller reports FailedToUpdateServeApplications for this error type alone.
    with pytest.raises(ServeUpdateError, match="^fail to create / update Serve applications"):
        await reconcile_serve(dashboard(put=500), ServeConfigCache(), "ns/svc", "c", "applications: []")
    with pytest.raises(DashboardError) as read_failure:
        await reconcile_serve(dashboard(get=500), ServeConfigCache(), "ns/svc", "c", "applications: []")
    assert not isinstance(read_failure.value, ServeUpdateError)
    submitted = await reconcile_serve(dashboard(), ServeConfigCache(), "ns/svc", "c", "applications: []")
    assert submitted.submitted and not submitted.ready


OPTIONS = ClusterUpgradeOptions.model_validate(
    {"maxSurgePercent": 20, "stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio"}
)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def upgrade_status(**sides: dict[str, Any]) -> dict[str, Any]:
    return {
        "conditions": [{"type": "UpgradeInProgress", "status": "True"}],
        "activeServiceStatus": {"rayClusterName": "a", **sides.get("active", {})},
        "pendingServiceStatus": {"rayClusterName": "p", **sides.get("pending", {})},
    }


def test_traffic_steps_towards_the_pending_capacity_once_per_interval() -> None:
    status = upgrade_status(pending={"targetCapacity": 20, "trafficRoutedPercent": 0})
    assert incremental.route_weights(status, OPTIONS, pending_exists=True, pending_ready=True, now=T0) == (
        90,
        10,
    )
    assert incremental.route_weights(status, OPTIONS, pending_exists=True, pending_ready=False, now=T0) == (
        100,
        0,
    )
    status["pendingServiceStatus"].update(
        trafficRoutedPercent=10, lastTrafficMigratedTime="2026-01-01T00:00:00Z"
    )
    soon, later = T0 + timedelta(seconds=5), T0 + timedelta(seconds=30)
    assert incremental.route_weights(status, OPTIONS, pending_exists=True, pending_ready=True, now=soon) == (
        100,
        10,
    )
    assert incremental.route_weights(status, OPTIONS, pending_exists=True, pending_ready=True, now=later) == (
        80,
        20,
    )
    status["pendingServiceStatus"]["trafficRoutedPercent"] = 20  # caught up with its capacity: stay
    status["activeServiceStatus"]["trafficRoutedPercent"] = 80
    assert incremental.route_weights(status, OPTIONS, pending_exists=True, pending_ready=True, now=later) == (
        80,
        20,
    )


def test_capacity_alternates_between_growing_pending_and_shrinking_active() -> None:
    status = upgrade_status(active={"trafficRoutedPercent": 100}, pending={"trafficRoutedPercent": 0})
    assert incremental.capacity_step(status, OPTIONS) == incremental.CapacityStep("pendingServiceStatus", 20)
    status["pendingServiceStatus"]["targetCapacity"] = 20
    assert incremental.capacity_step(status, OPTIONS) is None  # traffic has not caught up
    status["pendingServiceStatus"]["trafficRoutedPercent"] = 20
    assert incremental.capacity_step(status, OPTIONS) == incremental.CapacityStep("activeServiceStatus", 80)


def test_promotion_and_rollback_completion() -> None:
    status = upgrade_status(active={"targetCapacity": 0}, pending={"trafficRoutedPercent": 100})
    assert incremental.should_promote(status, pending_exists=True)
    status["conditions"].append({"type": "RollbackInProgress", "status": "True"})
    assert not incremental.should_promote(status, pending_exists=True)
    status["activeServiceStatus"].update(targetCapacity=100, trafficRoutedPercent=100)
    status["pendingServiceStatus"].update(targetCapacity=0, trafficRoutedPercent=0)
    assert incremental.rollback_complete(status, pending_head_ready=True)
    incremental.finish_rollback(status, NOW)
    upgrade = st.condition(status, "UpgradeInProgress")
    assert upgrade is not None and upgrade["message"] == incremental.ROLLBACK_COMPLETE
    assert st.condition(status, "RollbackInProgress") is None and status["pendingServiceStatus"] == {}


def test_the_rollback_decision_follows_the_goal_hash() -> None:
    active, pending = spec(), spec()
    pending["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = "new"
    status = upgrade_status()
    incremental.decide_rollback(status, stamped(active), stamped(pending), active, NOW)
    rollback = st.condition(status, "RollbackInProgress")
    assert rollback is not None and rollback["message"] == incremental.REVERTED
    incremental.decide_rollback(status, stamped(active), stamped(pending), pending, NOW)
    assert st.condition(status, "RollbackInProgress") is None
    third = copy.deepcopy(pending)
    third["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = "third"
    incremental.decide_rollback(status, stamped(active), stamped(pending), third, NOW)
    rollback = st.condition(status, "RollbackInProgress")
    assert rollback is not None and rollback["message"] == incremental.CHANGED
