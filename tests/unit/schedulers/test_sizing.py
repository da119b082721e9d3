"""The sizing helpers against spec ecosystem §1.3's rules."""

from __future__ import annotations

from typing import Any

import pytest

from kuberay.schedulers import sizing


def pod(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}}}]
        }
    }


def spec(**group: Any) -> dict[str, Any]:
    worker = {"groupName": "w", "template": pod({"cpu": "256m", "memory": "256Mi"}), **group}
    return {"headGroupSpec": {"template": pod({"cpu": "1", "memory": "1Gi"})}, "workerGroupSpecs": [worker]}


def test_pod_resource_adds_limit_only_names_and_skips_init_containers() -> None:
    template = pod({"cpu": "500m"}, {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"})
    template["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "8"}}}]
    assert sizing.pod_resource(template["spec"]) == {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}


@pytest.mark.parametrize(
    ("group", "desired", "minimum"),
    [
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, 3, 1),
        ({"replicas": 9, "minReplicas": 1, "maxReplicas": 5}, 5, 1),
        ({"minReplicas": 2, "maxReplicas": 5}, 2, 2),
        ({"replicas": 2, "minReplicas": 1, "maxReplicas": 5, "numOfHosts": 2}, 4, 2),
        ({"replicas": 2, "minReplicas": 1, "maxReplicas": 5, "suspend": True}, 0, 0),
    ],
)
def test_replicas(group: dict[str, Any], desired: int, minimum: int) -> None:
    assert sizing.desired_replicas(spec(**group)) == desired
    assert sizing.min_replicas(spec(**group)) == minimum


def test_resources_keep_canonical_form_and_use_raw_replicas() -> None:
    s = spec(replicas=3, minReplicas=1, maxReplicas=2)  # raw replicas (3), not clamped to max
    assert sizing.desired_resources(s) == {"cpu": "1768m", "memory": "1792Mi"}
    assert sizing.min_resources(s) == {"cpu": "1256m", "memory": "1280Mi"}
    assert sizing.desired_resources(spec(minReplicas=1)) == {"cpu": "1", "memory": "1Gi"}


def test_gang_size_follows_autoscaling() -> None:
    s = spec(replicas=3, minReplicas=1, maxReplicas=5)
    assert sizing.gang_size(s) == (4, {"cpu": "1768m", "memory": "1792Mi"})
    s["enableInTreeAutoscaling"] = True
    assert sizing.gang_size(s) == (2, {"cpu": "1256m", "memory": "1280Mi"})


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("K8sJobMode", {"cpu": "500m", "memory": "200Mi"}),
        (None, {"cpu": "500m", "memory": "200Mi"}),
        ("SidecarMode", {"cpu": "500m", "memory": "200Mi"}),
        ("HTTPMode", {}),
        ("InteractiveMode", {}),
    ],
)
def test_submitter_resources(mode: str | None, expected: dict[str, str]) -> None:
    job_spec = {"submissionMode": mode} if mode else {}
    assert sizing.submitter_resources(job_spec) == expected


def test_submitter_resources_of_a_custom_template() -> None:
    job_spec = {"submitterPodTemplate": pod({"cpu": "100m"}, {"memory": "64Mi"})}
    assert sizing.submitter_resources(job_spec) == {"cpu": "100m", "memory": "64Mi"}
