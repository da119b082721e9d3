"""What each plugin stamps on a child (spec ecosystem §1.4-§1.8), as tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kuberay.schedulers import kubernetes_was, volcano
from kuberay.schedulers.interface import BatchScheduler
from kuberay.schedulers.kai import Kai
from kuberay.schedulers.schedulerplugins import SchedulerPlugins
from kuberay.schedulers.yunikorn import YuniKorn

GANG = "ray.io/gang-scheduling-enabled"


def cluster(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    head = {"spec": {"containers": [{"name": "h", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}],
                     "nodeSelector": {"b": "2", "a": "1"}}}  # fmt: skip
    worker = {"spec": {"containers": [{"name": "w", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}}],
                       "tolerations": [{"key": "gpu", "operator": "Exists"}]}}  # fmt: skip
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "rc",
            "namespace": "ns",
            "uid": "u1",
            "labels": labels or {},
            "annotations": annotations or {},
        },  # fmt: skip
        "spec": {
            "headGroupSpec": {"template": head},
            "workerGroupSpecs": [
                {"groupName": "gpu", "replicas": 2, "minReplicas": 1, "numOfHosts": 2, "template": worker}
            ],
        },  # fmt: skip
    }


def rayjob(labels: dict[str, str] | None = None) -> dict[str, Any]:
    rc = cluster()
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "job", "namespace": "ns", "uid": "u2", "labels": labels or {}},
            "spec": {"submissionMode": "K8sJobMode", "rayClusterSpec": rc["spec"]}}  # fmt: skip


def stamp(
    plugin: BatchScheduler, parent: dict[str, Any], child: dict[str, Any], group: str
) -> dict[str, Any]:
    plugin.add_metadata_to_child_resource(parent, child, group)
    return child


POD = {"kind": "Pod", "metadata": {"labels": {"x": "y"}}, "spec": {"schedulerName": "mine"}}


@pytest.mark.parametrize(
    ("plugin", "labels", "group", "want_labels", "want_annotations", "scheduler"),
    [
        (volcano.Volcano.__new__(volcano.Volcano), {"volcano.sh/queue-name": "q", "ray.io/priority-class-name": "p"},
         "headgroup", {"x": "y", "volcano.sh/queue-name": "q", "ray.io/priority-class-name": "p"},
         {"scheduling.k8s.io/group-name": "ray-rc-pg", "volcano.sh/task-spec": "headgroup"}, "volcano"),
        (volcano.Volcano.__new__(volcano.Volcano), {"volcano.sh/queue-name": ""}, "gpu", {"x": "y"},
         {"scheduling.k8s.io/group-name": "ray-rc-pg", "volcano.sh/task-spec": "gpu"}, "volcano"),
        (YuniKorn(), {"yunikorn.apache.org/app-id": "app", "yunikorn.apache.org/queue": "root.q"}, "gpu",
         {"x": "y", "applicationId": "app", "queue": "root.q"}, {}, "yunikorn"),
        (SchedulerPlugins.__new__(SchedulerPlugins), {GANG: ""}, "gpu",
         {"x": "y", "scheduling.x-k8s.io/pod-group": "rc"}, {}, "scheduler-plugins-scheduler"),
        (SchedulerPlugins.__new__(SchedulerPlugins), {}, "gpu", {"x": "y"}, {}, "scheduler-plugins-scheduler"),
        (Kai(), {"kai.scheduler/queue": "team-a"}, "gpu", {"x": "y", "kai.scheduler/queue": "team-a"}, {},
         "kai-scheduler"),
        (Kai(), {}, "gpu", {"x": "y"}, {}, "kai-scheduler"),
        (BatchScheduler(), {"volcano.sh/queue-name": "q"}, "gpu", {"x": "y"}, {}, "mine"),
    ],
)  # fmt: skip
def test_pod_metadata(
    plugin: BatchScheduler,
    labels: dict[str, str],
    group: str,
    want_labels: dict[str, str],
    want_annotations: dict[str, str],
    scheduler: str,
) -> None:
    child = stamp(plugin, cluster(labels), json.loads(json.dumps(POD)), group)
    assert child["metadata"]["labels"] == want_labels
    assert child["metadata"].get("annotations", {}) == want_annotations
    assert child["spec"]["schedulerName"] == scheduler


def test_a_raycluster_child_gets_no_scheduler_name() -> None:
    child = {"kind": "RayCluster", "metadata": {}, "spec": {}}
    stamp(volcano.Volcano.__new__(volcano.Volcano), rayjob(), child, "")
    assert "schedulerName" not in child["spec"]
    assert child["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "ray-job-pg",
        "volcano.sh/task-spec": "",
    }


def test_volcano_group_name_of_a_rayjobs_cluster() -> None:
    labels = {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "job"}
    assert volcano.podgroup_name(cluster(labels)) == "ray-job-pg"
    assert volcano.podgroup_name(cluster({"ray.io/originated-from-crd": "RayJob"})) == "ray-rc-pg"


def test_volcano_podgroup_fields() -> None:
    labels = {"volcano.sh/queue-name": "q", "ray.io/priority-class-name": "high",
              "volcano.sh/network-topology-mode": "hard", "volcano.sh/network-topology-highest-tier-allowed": "2"}  # fmt: skip
    group = volcano.build_podgroup(cluster(labels, {"note": "n"}), 5, {"cpu": "5"})
    assert group["metadata"]["annotations"] == {"note": "n"}
    assert group["metadata"]["ownerReferences"] == [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc",
                                                      "uid": "u1", "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    assert group["spec"] == {"minMember": 5, "minResources": {"cpu": "5"}, "queue": "q", "priorityClassName": "high",
                             "networkTopology": {"mode": "hard", "highestTierAllowed": 2}}  # fmt: skip
    assert group["status"] == {"phase": "Pending"}


def test_volcano_bad_tier_label() -> None:
    labels = {
        "volcano.sh/network-topology-mode": "soft",
        "volcano.sh/network-topology-highest-tier-allowed": "x",
    }
    with pytest.raises(volcano.BatchSchedulingError, match="failed to convert volcano.sh/network-topology"):
        volcano.build_podgroup(cluster(labels), 1, {})


def test_yunikorn_task_groups_of_a_cluster() -> None:
    child = stamp(YuniKorn(), cluster({GANG: "true"}), {"kind": "Pod", "metadata": {}, "spec": {}}, "gpu")
    annotations = child["metadata"]["annotations"]
    assert annotations["yunikorn.apache.org/task-group-name"] == "gpu"
    assert annotations["yunikorn.apache.org/task-groups"] == (
        '[{"minResource":{"cpu":"1","memory":"2Gi"},"nodeSelector":{"a":"1","b":"2"},"name":"headgroup","minMember":1},'
        '{"minResource":{"cpu":"2","nvidia.com/gpu":"1"},"name":"gpu",'
        '"tolerations":[{"key":"gpu","operator":"Exists"}],"minMember":2}]'
    )


def test_yunikorn_task_groups_of_a_rayjob_add_the_submitter() -> None:
    child = stamp(YuniKorn(), rayjob({GANG: ""}), {"metadata": {}, "spec": {}}, "submittergroup")
    groups = json.loads(child["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
    assert [g["name"] for g in groups] == ["headgroup", "gpu", "submittergroup"]
    assert groups[2] == {
        "minResource": {"cpu": "500m", "memory": "200Mi"},
        "name": "submittergroup",
        "minMember": 1,
    }


def test_yunikorn_keeps_the_parents_own_task_groups() -> None:
    parent = cluster({GANG: ""}, {"yunikorn.apache.org/task-groups": "[]"})
    child = stamp(YuniKorn(), parent, {"metadata": {}, "spec": {}}, "")
    assert child["metadata"]["annotations"] == {"yunikorn.apache.org/task-groups": "[]"}


@pytest.mark.parametrize(
    ("gang", "autoscale", "stamped"), [("TRUE", False, True), ("yes", False, False), ("true", True, False)]
)
def test_kubernetes_was_pod_metadata(gang: str, autoscale: bool, stamped: bool) -> None:
    parent = cluster({GANG: gang})
    parent["spec"]["enableInTreeAutoscaling"] = autoscale
    child = stamp(kubernetes_was.KubernetesWAS.__new__(kubernetes_was.KubernetesWAS), parent,
                  {"kind": "Pod", "metadata": {}, "spec": {"schedulerName": "x"}}, "gpu")  # fmt: skip
    if stamped:
        assert child["spec"] == {
            "schedulerName": "default-scheduler",
            "schedulingGroup": {"podGroupName": "rc-cluster"},
        }
    else:
        assert child["spec"] == {"schedulerName": "x"}


def test_kubernetes_was_objects() -> None:
    workload, group = kubernetes_was.build_objects(cluster({GANG: "true"}))
    assert workload["spec"] == {"controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": "rc"},
                                "podGroupTemplates": [{"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 5}}}]}  # fmt: skip
    assert group["metadata"]["name"] == "rc-cluster"
    assert group["metadata"]["labels"] == {"ray.io/cluster": "rc"}
    assert group["spec"]["podGroupTemplateRef"] == {
        "workload": {"workloadName": "rc", "podGroupTemplateName": "cluster"}
    }
