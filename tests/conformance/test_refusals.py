"""A catalogue of invalid objects, each refused over HTTP with the field path and reason, nothing stored."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import httpx
import pytest

Mutation = Callable[[dict[str, Any]], None]


def _valid() -> dict[str, Any]:
    head = {
        "name": "ray-head",
        "image": "rayproject/ray:2.52.0",
        "ports": [{"containerPort": 6379, "name": "gcs"}],
    }
    worker = {"name": "ray-worker", "image": "rayproject/ray:2.52.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "refused", "labels": {"team": "a"}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 2,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [worker]}},
                }
            ],
        },
    }


def _set(path: str, value: Any) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = obj
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def _delete(path: str) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = obj
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        del target[last]

    return mutate


# (case id, mutation, field path the refusal names, words of the reason)
CATALOGUE: list[tuple[str, Mutation, str, str]] = [
    ("missing-head-group", _delete("spec.headGroupSpec"), "spec.headGroupSpec", "Required value"),
    (
        "missing-template",
        _delete("spec.headGroupSpec.template"),
        "spec.headGroupSpec.template",
        "Required value",
    ),
    (
        "missing-group-name",
        _delete("spec.workerGroupSpecs.0.groupName"),
        "spec.workerGroupSpecs[0].groupName",
        "Required value",
    ),
    (
        "missing-container-name",
        _delete("spec.headGroupSpec.template.spec.containers.0.name"),
        "spec.headGroupSpec.template.spec.containers[0].name",
        "Required value",
    ),
    (
        "template-not-object",
        _set("spec.headGroupSpec.template", "pod"),
        "spec.headGroupSpec.template",
        "must be of type object",
    ),
    (
        "replicas-not-integer",
        _set("spec.workerGroupSpecs.0.replicas", "two"),
        "spec.workerGroupSpecs[0].replicas",
        "must be of type integer",
    ),
    ("suspend-not-boolean", _set("spec.suspend", "yes"), "spec.suspend", "must be of type boolean"),
    ("ray-version-not-string", _set("spec.rayVersion", 2), "spec.rayVersion", "must be of type string"),
    (
        "worker-groups-not-array",
        _set("spec.workerGroupSpecs", {"groupName": "x"}),
        "spec.workerGroupSpecs",
        "must be of type array",
    ),
    (
        "start-params-not-strings",
        _set("spec.headGroupSpec.rayStartParams", {"num-cpus": 1}),
        "spec.headGroupSpec.rayStartParams.num-cpus",
        "must be of type string",
    ),
    (
        "port-not-integer",
        _set("spec.headGroupSpec.template.spec.containers.0.ports.0.containerPort", "6379"),
        "spec.headGroupSpec.template.spec.containers[0].ports[0].containerPort",
        "must be of type integer",
    ),
    (
        "bad-upscaling-mode",
        _set("spec.autoscalerOptions", {"upscalingMode": "Fast"}),
        "spec.autoscalerOptions.upscalingMode",
        "Unsupported value",
    ),
    (
        "bad-autoscaler-version",
        _set("spec.autoscalerOptions", {"version": "v3"}),
        "spec.autoscalerOptions.version",
        "Unsupported value",
    ),
    (
        "bad-auth-mode",
        _set("spec.authOptions", {"mode": "password"}),
        "spec.authOptions.mode",
        "Unsupported value",
    ),
    (
        "bad-gcs-backend",
        _set("spec.gcsFaultToleranceOptions", {"backend": "etcd"}),
        "spec.gcsFaultToleranceOptions.backend",
        "Unsupported value",
    ),
    (
        "bad-network-policy-mode",
        _set("spec.networkPolicy", {"mode": "AllowAll"}),
        "spec.networkPolicy.mode",
        "Unsupported value",
    ),
    (
        "bad-upgrade-strategy",
        _set("spec.upgradeStrategy", {"type": "Rolling"}),
        "spec.upgradeStrategy.type",
        "Unsupported value",
    ),
    (
        "bad-storage-size",
        _set("spec.gcsFaultToleranceOptions", {"backend": "rocksdb", "storage": {"size": "lots"}}),
        "spec.gcsFaultToleranceOptions.storage.size",
        "should match",
    ),
    ("cel-managed-by", _set("spec.managedBy", "someone-else"), "spec.managedBy", "Invalid value"),
    ("bad-name", _set("metadata.name", "Bad_Name"), "metadata.name", "a lowercase RFC 1123 subdomain"),
    (
        "name-too-long",
        _set("metadata.name", "a" * 254),
        "metadata.name",
        "must be no more than 253 characters",
    ),
    (
        "bad-label-key",
        _set("metadata.labels", {"bad key": "x"}),
        "metadata.labels",
        "name part must consist of alphanumeric characters",
    ),
    (
        "bad-label-value",
        _set("metadata.labels", {"team": "-x-"}),
        "metadata.labels",
        "a valid label must be an empty string",
    ),
    (
        "annotations-too-large",
        _set("metadata.annotations", {"big": "x" * 262145}),
        "metadata.annotations",
        "Too long",
    ),
]


@pytest.mark.parametrize(("case", "mutate", "field", "reason"), CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_invalid_raycluster_is_refused_with_field_and_reason(api: httpx.Client, namespace: str, case: str, mutate: Mutation, field: str, reason: str) -> None:  # fmt: skip
    obj = copy.deepcopy(_valid())
    mutate(obj)
    refused = api.post(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", json=obj)
    assert refused.status_code == 422, refused.text
    status = refused.json()
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    assert status["message"].startswith(f'RayCluster.ray.io "{obj["metadata"]["name"]}" is invalid: ')
    causes = status["details"]["causes"]
    assert any(cause.get("field") == field and reason in cause["message"] for cause in causes), causes
    assert f"{field}: " in status["message"]
    listed = api.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters").json()
    assert listed["items"] == []


def test_the_valid_base_object_is_accepted(api: httpx.Client, namespace: str) -> None:
    created = api.post(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", json=_valid())
    assert created.status_code == 201, created.text
