from typing import Any

import pytest
from pydantic import ValidationError

from kuberay.api.meta import Condition, ObjectMeta
from kuberay.api.raycluster import (
    ClusterState,
    HeadGroupSpec,
    RayCluster,
    RayClusterSpec,
    RayClusterStatus,
    WorkerGroupSpec,
)
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.rayjob import JobDeploymentStatus, RayJob, RayJobStatus
from kuberay.api.rayservice import RayService

POD: dict[str, Any] = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}


def _cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c"},
        "spec": {"headGroupSpec": {"template": POD}, **spec},
    }


def test_unknown_fields_survive_at_every_level() -> None:
    data = _cluster(
        futureSpecField={"a": 1}, workerGroupSpecs=[{"groupName": "g", "template": POD, "newKnob": True}]
    )
    data["spec"]["headGroupSpec"]["futureHeadField"] = "x"
    data["status"] = {"head": {"podIP": "10.0.0.1", "podIPs": ["10.0.0.1"]}, "futureStatus": 3}
    data["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    assert RayCluster.parse(data).dump() == data


def test_python_names_are_accepted_and_kind_is_always_written() -> None:
    cluster = RayCluster(
        metadata=ObjectMeta(name="c", namespace="ns"),
        spec=RayClusterSpec(
            head_group_spec=HeadGroupSpec(template=POD, ray_start_params={"num-cpus": "1"}),
            worker_group_specs=[WorkerGroupSpec(group_name="g", template=POD, max_replicas=3)],
        ),
    )
    assert cluster.dump() == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "headGroupSpec": {"template": POD, "rayStartParams": {"num-cpus": "1"}},
            "workerGroupSpecs": [{"groupName": "g", "template": POD, "maxReplicas": 3}],
        },
    }
    assert (cluster.name, cluster.namespace, cluster.labels) == ("c", "ns", {})


def test_crd_defaults_are_seen_but_not_written() -> None:
    group = RayCluster.parse(
        _cluster(workerGroupSpecs=[{"groupName": "g", "template": POD}])
    ).spec.worker_group_specs
    assert group is not None
    assert (group[0].replicas, group[0].min_replicas, group[0].max_replicas, group[0].num_of_hosts) == (
        0,
        0,
        2147483647,
        1,
    )
    assert RayJob.parse({"kind": "RayJob", "spec": {}}).spec.submission_mode == "K8sJobMode"
    assert RayJob.parse({"kind": "RayJob", "spec": {}}).dump()["spec"] == {}


@pytest.mark.parametrize(
    "spec",
    [
        {"upgradeStrategy": {"type": "Rolling"}},
        {"authOptions": {"mode": "password"}},
        {"gcsFaultToleranceOptions": {"backend": "etcd"}},
        {"autoscalerOptions": {"version": "v3"}},
        {"networkPolicy": {"mode": "AllowAll"}},
    ],
)
def test_crd_enums_refuse_other_values(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        RayCluster.parse(_cluster(**spec))


def test_deletion_rules_refuse_unknown_policy() -> None:
    rule = {"policy": "DeleteEverything", "condition": {"jobStatus": "FAILED"}}
    with pytest.raises(ValidationError, match="deletionRules"):
        RayJob.parse({"kind": "RayJob", "spec": {"deletionStrategy": {"deletionRules": [rule]}}})


def test_required_fields_are_required() -> None:
    with pytest.raises(ValidationError, match="headGroupSpec"):
        RayCluster.parse({"spec": {}})
    with pytest.raises(ValidationError, match="schedule"):
        RayCronJob.parse({"spec": {"jobTemplate": {}}})
    with pytest.raises(ValidationError, match="rayClusterConfig"):
        RayService.parse({"spec": {}})


def test_scalars_keep_their_json_type() -> None:
    status = RayClusterStatus.parse({"desiredCPU": "2", "desiredMemory": 4, "lastUpdateTime": None})
    assert status.dump() == {"desiredCPU": "2", "desiredMemory": 4, "lastUpdateTime": None}
    spec = RayJob.parse({"spec": {"entrypointNumCpus": 2, "entrypointNumGpus": 0.5}}).dump()["spec"]
    assert (type(spec["entrypointNumCpus"]), spec["entrypointNumGpus"]) == (int, 0.5)


def test_status_set_from_code_is_written_as_plain_strings() -> None:
    cluster = RayCluster.parse(_cluster())
    cluster.status = RayClusterStatus(state=ClusterState.READY)
    job_status = RayJobStatus()
    job_status.job_deployment_status = JobDeploymentStatus.RUNNING
    assert cluster.dump()["status"] == {"state": "ready"}
    assert job_status.dump() == {"jobDeploymentStatus": "Running"}
    assert job_status.succeeded == 0


def test_condition_checks_status_and_required_fields() -> None:
    fields = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "R",
        "message": "",
    }
    assert Condition.parse(fields).dump() == fields
    with pytest.raises(ValidationError):
        Condition.parse({**fields, "status": "Yes"})
    with pytest.raises(ValidationError, match="reason"):
        Condition.parse({k: v for k, v in fields.items() if k != "reason"})
