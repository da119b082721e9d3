"""ResourceQuota, LimitRange and PriorityClass admission on the in-process cluster (REST layer and every
controller), with kube-apiserver's messages: quota refusals are 403 Forbidden and name what was requested,
used and limited; the quota controller publishes `status.hard` and `status.used` and gives back what a
deleted pod held."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from localkube.admission import limitranger, priority, quota
from localkube.server.errors import ApiError
from localkube.server.rest import Resources
from support.eventually import eventually

NS = "default"
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _create(cluster: Resources, plural: str, obj: dict[str, Any], group: str = "") -> dict[str, Any]:
    resource_type = cluster.registry.by_resource(group, plural)
    assert resource_type is not None
    return cluster.create(resource_type, NS if resource_type.namespaced else None, obj, {})


def _pod(name: str, **resources: dict[str, str]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if resources:
        container["resources"] = resources
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def _quota(name: str, **hard: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"hard": hard}}


async def _published(cluster: Resources, name: str, **used: str) -> dict[str, Any]:
    key = f"/registry/core/resourcequotas/{NS}/{name}"

    def check() -> dict[str, Any] | None:
        found = cluster.store.get(key)
        status = (found or {}).get("status") or {}
        hard = ((found or {}).get("spec") or {}).get("hard")
        return (
            found
            if status.get("hard") == hard and all(status.get("used", {}).get(k) == v for k, v in used.items())
            else None
        )

    result: dict[str, Any] = await eventually(check, 10, f"quota {name} used {used}", every=0.02)
    return result


def _refusal(cluster: Resources, plural: str, obj: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as refused:
        _create(cluster, plural, obj)
    return refused.value


async def test_a_pod_beyond_the_pods_quota_is_forbidden_with_the_api_servers_message(
    cluster: Resources,
) -> None:
    _create(cluster, "resourcequotas", _quota("none", pods="0"))
    published = await _published(cluster, "none", pods="0")
    assert published["status"] == {"hard": {"pods": "0"}, "used": {"pods": "0"}}
    error = _refusal(cluster, "pods", _pod("web"))
    assert error.code == 403 and error.reason == "Forbidden"
    assert error.message == (
        'pods "web" is forbidden: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0'
    )
    assert error.status()["details"] == {"name": "web", "kind": "pods"}
    assert cluster.store.get(f"/registry/core/pods/{NS}/web") is None


async def test_creates_are_charged_at_once_and_deletes_given_back_by_the_controller(
    cluster: Resources,
) -> None:
    _create(
        cluster, "resourcequotas", _quota("two", pods="2", **{"requests.cpu": "1", "limits.memory": "1Gi"})
    )
    await _published(cluster, "two", pods="0")
    limits = {"cpu": "500m", "memory": "512Mi"}
    _create(cluster, "pods", _pod("a", limits=limits))
    # Charged by admission itself, before the controller counts again.
    charged = cluster.store.get(f"/registry/core/resourcequotas/{NS}/two")
    assert charged is not None and charged["status"]["used"] == {
        "pods": "1",
        "requests.cpu": "500m",
        "limits.memory": "512Mi",
    }
    _create(cluster, "pods", _pod("b", limits=limits))
    error = _refusal(cluster, "pods", _pod("c", limits=limits))
    assert error.message == (
        'pods "c" is forbidden: exceeded quota: two, requested: limits.memory=512Mi,pods=1,requests.cpu=500m, '
        "used: limits.memory=1Gi,pods=2,requests.cpu=1, limited: limits.memory=1Gi,pods=2,requests.cpu=1"
    )
    pods = cluster.registry.by_resource("", "pods")
    assert pods is not None
    cluster.delete(pods, NS, "a", {"gracePeriodSeconds": 0}, {})
    await _published(cluster, "two", pods="1", **{"requests.cpu": "500m", "limits.memory": "512Mi"})
    _create(cluster, "pods", _pod("c", limits=limits))


async def test_a_quota_on_limits_needs_every_container_to_name_them(cluster: Resources) -> None:
    _create(
        cluster,
        "resourcequotas",
        _quota("compute", **{"limits.cpu": "2", "limits.memory": "2Gi", "pods": "5"}),
    )
    await _published(cluster, "compute", pods="0")
    error = _refusal(cluster, "pods", _pod("bare"))
    assert error.code == 403
    assert error.message == (
        'pods "bare" is forbidden: failed quota: compute: must specify limits.cpu for: c; limits.memory for: c'
    )


async def test_object_counts_for_services_configmaps_and_secrets(cluster: Resources) -> None:
    hard = {"count/configmaps": "2", "services": "0", "count/secrets": "0"}
    _create(cluster, "resourcequotas", _quota("objects", **hard))
    # The namespace's own root CA ConfigMap is not published without an API address; none here.
    await _published(cluster, "objects", services="0")
    _create(cluster, "configmaps", {"metadata": {"name": "one"}})
    error = _refusal(cluster, "services", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    assert error.message == (
        'services "s" is forbidden: exceeded quota: objects, requested: services=1, used: services=0, limited: services=0'
    )
    error = _refusal(cluster, "secrets", {"metadata": {"name": "k"}})
    assert "requested: count/secrets=1, used: count/secrets=0, limited: count/secrets=0" in error.message
    await _published(cluster, "objects", **{"count/configmaps": "1"})


async def test_raising_the_quota_lets_the_pod_in(cluster: Resources) -> None:
    _create(cluster, "resourcequotas", _quota("q", pods="0"))
    await _published(cluster, "q", pods="0")
    _refusal(cluster, "pods", _pod("later"))
    quotas = cluster.registry.by_resource("", "resourcequotas")
    assert quotas is not None
    current = cluster.get(quotas, NS, "q")
    cluster.update(quotas, NS, "q", {**current, "spec": {"hard": {"pods": "1"}}}, None, {})
    await _published(cluster, "q", pods="0")
    _create(cluster, "pods", _pod("later"))
    await _published(cluster, "q", pods="1")


def test_a_negative_or_unknown_hard_is_invalid_with_its_field_path(cluster: Resources) -> None:
    error = _refusal(cluster, "resourcequotas", _quota("bad", pods="-1"))
    assert error.code == 422
    assert error.message == (
        'ResourceQuota "bad" is invalid: spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0'
    )
    assert error.status()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "-1": must be greater than or equal to 0',
            "field": "spec.hard[pods]",
        }
    ]
    error = _refusal(cluster, "resourcequotas", _quota("worse", bogus="1", services="1.5"))
    assert error.message == (
        'ResourceQuota "worse" is invalid: [spec.hard[bogus]: Invalid value: "bogus": must be a standard resource '
        'type or fully qualified, spec.hard[bogus]: Invalid value: "bogus": must be a standard resource for quota, '
        'spec.hard[services]: Invalid value: "1500m": must be an integer]'
    )
    scoped = {"metadata": {"name": "scoped"}, "spec": {"hard": {"pods": "1"}, "scopes": ["Nope"]}}
    assert _refusal(cluster, "resourcequotas", scoped).message == (
        'ResourceQuota "scoped" is invalid: spec.scopes: Invalid value: ["Nope"]: unsupported scope'
    )


def test_limitrange_defaults_are_applied_before_quota(cluster: Resources) -> None:
    limit_range = {
        "metadata": {"name": "defaults"},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": "1", "memory": "1Gi"},
                    "defaultRequest": {"cpu": "250m"},
                }
            ]
        },
    }
    _create(cluster, "limitranges", limit_range)
    pod = _create(cluster, "pods", _pod("defaulted"))
    resources = pod["spec"]["containers"][0]["resources"]
    # The stored LimitRange's defaults (defaultRequest memory from default) are what is applied.
    assert resources == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "250m", "memory": "1Gi"},
    }
    assert pod["metadata"]["annotations"][limitranger.ANNOTATION] == (
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    )
    own = _create(cluster, "pods", _pod("own", limits={"cpu": "2"}))
    assert own["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2", "memory": "1Gi"},
        "requests": {"memory": "1Gi"},
    }


def test_priority_classes_resolve_into_spec_priority(cluster: Resources) -> None:
    pod = _create(cluster, "pods", _pod("plain"))
    assert pod["spec"]["priority"] == 0 and pod["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert "priorityClassName" not in pod["spec"]
    _create(
        cluster,
        "priorityclasses",
        {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
        "scheduling.k8s.io",
    )
    high = _pod("high")
    high["spec"]["priorityClassName"] = "high"
    pod = _create(cluster, "pods", high)
    assert pod["spec"]["priority"] == 1000 and pod["spec"]["preemptionPolicy"] == "Never"
    missing = _pod("missing")
    missing["spec"]["priorityClassName"] = "nope"
    error = _refusal(cluster, "pods", missing)
    assert error.code == 403
    assert error.message == 'pods "missing" is forbidden: no PriorityClass with name nope was found'
    wrong = _pod("wrong")
    wrong["spec"].update(priorityClassName="high", priority=5)
    assert _refusal(cluster, "pods", wrong).message == (
        'pods "wrong" is forbidden: the integer value of priority (5) must not be provided in pod spec; '
        "priority admission controller computed 1000 from the given PriorityClass name"
    )
    _create(
        cluster,
        "priorityclasses",
        {"metadata": {"name": "low"}, "value": 10, "globalDefault": True},
        "scheduling.k8s.io",
    )
    pod = _create(cluster, "pods", _pod("defaulted"))
    assert pod["spec"]["priority"] == 10 and pod["spec"]["priorityClassName"] == "low"
    with pytest.raises(ApiError) as second:
        _create(
            cluster,
            "priorityclasses",
            {"metadata": {"name": "other"}, "value": 1, "globalDefault": True},
            "scheduling.k8s.io",
        )
    assert second.value.message == (
        'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass low is already marked as default. '
        "Only one default can exist"
    )
    critical = _pod("critical")
    critical["spec"]["priorityClassName"] = "system-cluster-critical"
    assert _create(cluster, "pods", critical)["spec"]["priority"] == 2000000000


def test_a_generated_name_is_named_by_its_prefix_in_a_priority_refusal(cluster: Resources) -> None:
    pod = _pod("")
    pod["metadata"] = {"generateName": "web-"}
    pod["spec"]["priorityClassName"] = "nope"
    assert _refusal(cluster, "pods", pod).message.startswith('pods "web-" is forbidden: no PriorityClass')


def test_pod_usage_sums_containers_against_the_largest_init_container() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
        }
    }
    used = {k: v.text() for k, v in quota.pod_usage(pod, NOW).items()}
    assert used == {
        "count/pods": "1", "pods": "1", "cpu": "2", "requests.cpu": "2",
        "memory": "1536Mi", "requests.memory": "1536Mi", "limits.memory": "1Gi",
    }  # fmt: skip
    finished = {**pod, "status": {"phase": "Succeeded"}}
    assert {k: v.text() for k, v in quota.pod_usage(finished, NOW).items()} == {"count/pods": "1"}


def test_a_quota_without_published_status_limits_nothing_and_scopes_select_pods() -> None:
    fresh = {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "0"}}}
    assert quota.charge([fresh], "pods", "", _pod("x"), NOW) == []
    best_effort = {
        "metadata": {"name": "be", "resourceVersion": "1"},
        "spec": {"hard": {"pods": "0"}, "scopes": ["BestEffort"]},
        "status": {"hard": {"pods": "0"}, "used": {"pods": "0"}},
    }
    assert quota.charge([best_effort], "pods", "", _pod("burstable", requests={"cpu": "1"}), NOW) == []
    with pytest.raises(quota.QuotaRefused):
        quota.charge([best_effort], "pods", "", _pod("besteffort"), NOW)


def test_priority_resolution_without_a_class_store() -> None:
    pod: dict[str, Any] = {"spec": {"priorityClassName": "system-node-critical"}}
    priority.resolve(pod, [])
    assert pod["spec"]["priority"] == 2000001000


def test_a_claim_costs_its_requested_storage() -> None:
    claim = {"spec": {"resources": {"requests": {"storage": "5Gi"}}}}
    used = {k: v.text() for k, v in quota.usage("persistentvolumeclaims", "", claim, NOW).items()}
    assert used == {
        "count/persistentvolumeclaims": "1",
        "persistentvolumeclaims": "1",
        "requests.storage": "5Gi",
    }
    hard = {"requests.storage": "10Gi", "persistentvolumeclaims": "2"}
    published = quota.calculate(
        hard, {"spec": {"hard": hard}}, {("", "persistentvolumeclaims"): [claim, claim]}, NOW
    )
    assert published == {"persistentvolumeclaims": "2", "requests.storage": "10Gi"}
