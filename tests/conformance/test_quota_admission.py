"""ResourceQuota, LimitRange and PriorityClass admission over HTTP, once per backend (localkube, and
kube-apiserver itself when realkube is selected), so that each refusal's words are the real server's."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.eventually import eventually

_counter = itertools.count()
_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


@pytest.fixture
def api(kube_backend: Any) -> Iterator[httpx.Client]:
    with kube_backend.client(timeout=30) as client:
        yield client


@pytest.fixture
def namespace(api: httpx.Client) -> Iterator[str]:
    name = f"quota-{next(_counter)}-{os.getpid()}"
    api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).raise_for_status()
    yield name
    api.delete(f"/api/v1/namespaces/{name}")


def _pod(name: str, **resources: dict[str, str]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if resources:
        container["resources"] = resources
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def _published_quota(api: httpx.Client, namespace: str, name: str, hard: dict[str, str]) -> None:
    path = f"/api/v1/namespaces/{namespace}/resourcequotas"
    api.post(path, json={"metadata": {"name": name}, "spec": {"hard": hard}}).raise_for_status()

    def published() -> bool:
        status = api.get(f"{path}/{name}").json().get("status") or {}
        return status.get("hard") == hard and set(status.get("used") or {}) == set(hard)

    eventually(published, 30, f"quota {name} published", every=0.1)


def _refused(api: httpx.Client, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The 403 a create gets. kube-apiserver's admission reads quotas from its cache, which may not hold the
    status just published yet: what it let through meanwhile is deleted and the create tried again."""

    def refusal() -> dict[str, Any] | None:
        reply = api.post(path, json=obj)
        if reply.status_code == 201:
            api.delete(f"{path}/{reply.json()['metadata']['name']}", params={"gracePeriodSeconds": "0"})
            return None
        assert reply.status_code == 403, reply.text
        body: dict[str, Any] = reply.json()
        return body

    found: dict[str, Any] = eventually(refusal, 10, f"a refusal of {obj['metadata']}", every=0.2)
    return found


def test_quota_refusals_in_the_api_servers_words(api: httpx.Client, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    _published_quota(api, namespace, "compute", {"limits.cpu": "1", "limits.memory": "1Gi", "pods": "1"})
    body = _refused(api, pods, _pod("bare"))
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods "bare" is forbidden: failed quota: compute: must specify limits.cpu for: c; limits.memory for: c'
    )
    assert body["details"] == {"name": "bare", "kind": "pods"}
    big = _pod("big", limits={"cpu": "2", "memory": "512Mi"})
    assert _refused(api, pods, big)["message"] == (
        'pods "big" is forbidden: exceeded quota: compute, requested: limits.cpu=2, used: limits.cpu=0, '
        "limited: limits.cpu=1"
    )
    generated = _pod("", limits={"cpu": "2", "memory": "512Mi"})
    generated["metadata"] = {"generateName": "web-"}
    # Named by the name made of its generateName: ResourceQuota runs after that is made.
    body = _refused(api, pods, generated)
    name = body["details"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5
    assert body["message"].startswith(f'pods "{name}" is forbidden: exceeded quota: compute')


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"hard": {"pods": "-1"}},
            'spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0',
        ),
        ({"hard": {"services": "1.5"}}, 'spec.hard[services]: Invalid value: "1500m": must be an integer'),
        (
            {"hard": {"bogus": "1"}},
            '[spec.hard[bogus]: Invalid value: "bogus": must be a standard resource type or fully qualified, '
            'spec.hard[bogus]: Invalid value: "bogus": must be a standard resource for quota]',
        ),
        (
            {"hard": {"pods": "1"}, "scopes": ["Nope"]},
            'spec.scopes: Invalid value: ["Nope"]: unsupported scope',
        ),
    ],
)
def test_a_malformed_quota_is_invalid_with_its_field_path(
    api: httpx.Client, namespace: str, spec: dict[str, Any], message: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/resourcequotas"
    reply = api.post(path, json={"metadata": {"name": "bad"}, "spec": spec})
    assert reply.status_code == 422, reply.text
    assert reply.json()["message"] == f'ResourceQuota "bad" is invalid: {message}'
    assert api.get(f"{path}/bad").status_code == 404


def test_a_generated_name_is_its_prefix_in_a_mutating_refusal(api: httpx.Client, namespace: str) -> None:
    pod = _pod("")
    pod["metadata"] = {"generateName": "pc-"}
    pod["spec"]["priorityClassName"] = "no-such-class"
    assert _refused(api, f"/api/v1/namespaces/{namespace}/pods", pod)["message"] == (
        'pods "pc-" is forbidden: no PriorityClass with name no-such-class was found'
    )


def test_object_count_refusals(api: httpx.Client, namespace: str) -> None:
    _published_quota(api, namespace, "objects", {"count/secrets": "0", "services": "0"})
    assert _refused(api, f"/api/v1/namespaces/{namespace}/secrets", {"metadata": {"name": "s"}})[
        "message"
    ] == (
        'secrets "s" is forbidden: exceeded quota: objects, requested: count/secrets=1, used: count/secrets=0, '
        "limited: count/secrets=0"
    )
    service = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    assert _refused(api, f"/api/v1/namespaces/{namespace}/services", service)["message"] == (
        'services "web" is forbidden: exceeded quota: objects, requested: services=1, used: services=0, '
        "limited: services=0"
    )


def test_limitrange_defaults_a_pods_containers(api: httpx.Client, namespace: str) -> None:
    limit_range = {
        "metadata": {"name": "defaults"},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": "500m", "memory": "256Mi"},
                    "defaultRequest": {"cpu": "100m"},
                }
            ]
        },
    }
    api.post(f"/api/v1/namespaces/{namespace}/limitranges", json=limit_range).raise_for_status()
    created = api.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod("defaulted"))
    created.raise_for_status()
    pod = created.json()
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "100m", "memory": "256Mi"},
    }
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    )


@pytest.fixture
def priority_class(api: httpx.Client) -> Iterator[str]:
    name = f"quota-high-{os.getpid()}-{next(_counter)}"
    created = api.post(_CLASSES, json={"metadata": {"name": name}, "value": 1000})
    created.raise_for_status()
    assert created.json()["preemptionPolicy"] == "PreemptLowerPriority"
    yield name
    api.delete(f"{_CLASSES}/{name}")


def test_priority_classes_resolve_into_the_pods_priority(
    api: httpx.Client, namespace: str, priority_class: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    plain = api.post(pods, json=_pod("plain"))
    plain.raise_for_status()
    assert plain.json()["spec"]["priority"] == 0
    assert plain.json()["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    high = _pod("high")
    high["spec"]["priorityClassName"] = priority_class
    created = api.post(pods, json=high)
    created.raise_for_status()
    assert created.json()["spec"]["priority"] == 1000
    missing = _pod("missing")
    missing["spec"]["priorityClassName"] = "no-such-class"
    assert _refused(api, pods, missing)["message"] == (
        'pods "missing" is forbidden: no PriorityClass with name no-such-class was found'
    )
    wrong = _pod("wrong")
    wrong["spec"].update(priorityClassName=priority_class, priority=7)
    assert _refused(api, pods, wrong)["message"] == (
        'pods "wrong" is forbidden: the integer value of priority (7) must not be provided in pod spec; '
        "priority admission controller computed 1000 from the given PriorityClass name"
    )
