"""The offline CRD schema check: defaults first, then every OpenAPI keyword and CEL rule our CRDs use,
with the API server's paths and wording."""

from __future__ import annotations

from typing import Any

import pytest

from kuberay.api import schemacheck
from kuberay.api.validation import FieldError

HEAD = {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}}


def cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c"},
        "spec": {"headGroupSpec": HEAD, **spec},
    }


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"}, "spec": spec}


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(error) for error in schemacheck.check(obj, obj["kind"])]


def test_defaults_are_applied_before_validation() -> None:
    group = {"groupName": "g", "template": HEAD["template"]}
    obj = cluster(workerGroupSpecs=[group])
    stored = schemacheck.defaulted(obj, "RayCluster")
    assert stored["spec"]["workerGroupSpecs"][0] | group == {
        **group,
        "minReplicas": 0,
        "maxReplicas": 2147483647,
        "replicas": 0,
        "numOfHosts": 1,
        "priority": 0,
    }
    assert schemacheck.check(obj, "RayCluster") == []  # minReplicas/maxReplicas are required, and defaulted
    assert schemacheck.defaulted(job(), "RayJob")["spec"]["submissionMode"] == "K8sJobMode"
    assert obj["spec"]["workerGroupSpecs"][0] == group  # the input is not touched


def test_null_in_a_non_nullable_field_reads_as_absent() -> None:
    obj = cluster(
        workerGroupSpecs=[
            {"groupName": "g", "minReplicas": None, "template": {"metadata": None, **HEAD["template"]}}
        ]
    )
    assert schemacheck.check(obj, "RayCluster") == []
    assert schemacheck.defaulted(obj, "RayCluster")["spec"]["workerGroupSpecs"][0]["minReplicas"] == 0
    assert messages({**cluster(), "status": {"lastUpdateTime": None}}) == []  # nullable


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({**cluster(), "spec": {}}, "spec.headGroupSpec: Required value"),
        (
            cluster(enableInTreeAutoscaling="yes"),
            'spec.enableInTreeAutoscaling: Invalid value: "string": spec.enableInTreeAutoscaling in body must be '
            'of type boolean: "string"',
        ),
        (
            cluster(upgradeStrategy={"type": "Rolling"}),
            'spec.upgradeStrategy.type: Unsupported value: "Rolling": supported values: "Recreate", "None"',
        ),
        (
            cluster(gcsFaultToleranceOptions={"storage": {"size": "lots"}}),
            'spec.gcsFaultToleranceOptions.storage.size: Invalid value: "lots": spec.gcsFaultToleranceOptions.'
            "storage.size in body should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
            "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'",
        ),
        (
            cluster(gcsFaultToleranceOptions={"storage": {"size": True}}),
            'spec.gcsFaultToleranceOptions.storage.size: Invalid value: "boolean": spec.gcsFaultToleranceOptions.'
            'storage.size in body must be of type integer,string: "boolean"',
        ),
        (
            {**job(), "status": {"startTime": "yesterday"}},
            'status.startTime: Invalid value: "yesterday": status.startTime in body must be of type date-time: '
            '"yesterday"',
        ),
        (
            job(preRunningDeadlineSeconds=0),
            "spec.preRunningDeadlineSeconds: Invalid value: 0: spec.preRunningDeadlineSeconds in body should be "
            "greater than or equal to 1",
        ),
        (
            {
                **cluster(),
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "R",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                            "message": "m" * 32769,
                        }
                    ]
                },
            },
            "status.conditions[0].message: Too long: may not be more than 32768 bytes",
        ),
        (
            {
                **cluster(),
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "Maybe",
                            "reason": "R",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                            "message": "",
                        }
                    ]
                },
            },
            'status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"',
        ),
        (
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCronJob",
                "metadata": {"name": "c"},
                "spec": {"schedule": "@daily", "jobTemplate": {}, "timeZone": ""},
            },
            'spec.timeZone: Invalid value: "": spec.timeZone in body should be at least 1 chars long',
        ),
        (cluster(colour="blue"), 'spec.colour: unknown field "spec.colour"'),
        (
            cluster(managedBy="someone-else"),
            'spec.managedBy: Invalid value: "string": the managedBy field value must be either '
            "'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
        ),
        (
            job(deletionStrategy={"onSuccess": {"policy": "DeleteCluster"}}),
            'spec.deletionStrategy: Invalid value: "object": deletionStrategy requires either BOTH onSuccess and '
            "onFailure, OR the deletionRules field (cannot be empty)",
        ),
        (
            job(deletionStrategy={"deletionRules": [{"policy": "DeleteSelf", "condition": {}}]}),
            'spec.deletionStrategy.deletionRules[0].condition: Invalid value: "object": the deletion condition '
            "requires either the JobStatus or the JobDeploymentStatus field.",
        ),
    ],
)
def test_one_failure(obj: dict[str, Any], expected: str) -> None:
    assert messages(obj) == [expected]


def test_an_empty_list_fails_min_items_but_is_present_for_cel() -> None:
    assert messages(job(deletionStrategy={"deletionRules": []})) == [
        "spec.deletionStrategy.deletionRules: Invalid value: 0: spec.deletionStrategy.deletionRules in body "
        "should have at least 1 items"
    ]


def test_list_map_keys_must_be_unique() -> None:
    head = {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "ray-head",
                        "image": "r",
                        "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
                    }
                ]
            }
        }
    }
    assert messages(cluster(headGroupSpec=head)) == [
        'spec.headGroupSpec.template.spec.containers[0].env[1]: Duplicate value: {"name":"A"}'
    ]


def active_passive(**timings: int) -> dict[str, Any]:
    return cluster(gcsFaultToleranceOptions={"redisAddress": "r:6379", "activePassiveOptions": timings})


@pytest.mark.parametrize(
    ("timings", "expected"),
    [
        ({}, []),
        ({"leaseDurationSeconds": 60, "renewDeadlineSeconds": 40, "retryPeriodSeconds": 5}, []),
        # Each rule compares defaults (15, 10, 2) where a timing is absent.
        ({"leaseDurationSeconds": 10}, ["leaseDurationSeconds must be greater than renewDeadlineSeconds"]),
        ({"retryPeriodSeconds": 10}, ["renewDeadlineSeconds must be greater than retryPeriodSeconds"]),
        (
            {"leaseDurationSeconds": 5, "renewDeadlineSeconds": 5, "retryPeriodSeconds": 5},
            [
                "leaseDurationSeconds must be greater than renewDeadlineSeconds",
                "renewDeadlineSeconds must be greater than retryPeriodSeconds",
            ],
        ),
    ],
)
def test_active_passive_lease_timings(timings: dict[str, int], expected: list[str]) -> None:
    at = 'spec.gcsFaultToleranceOptions.activePassiveOptions: Invalid value: "object": '
    assert messages(active_passive(**timings)) == [at + reason for reason in expected]
    stored = schemacheck.defaulted(active_passive(), "RayCluster")["spec"]["gcsFaultToleranceOptions"]
    assert stored["activePassiveOptions"] == {
        "leaseDurationSeconds": 15,
        "renewDeadlineSeconds": 10,
        "retryPeriodSeconds": 2,
    }


def test_v1_8_worker_group_fields() -> None:
    group = {"groupName": "g", "template": HEAD["template"]}
    gates = [{"name": "kueue.k8s.io/quota-exceeded"}, {"name": "example.com/maintenance"}]
    fine = {
        **group,
        "labelMappings": [{"nodeLabel": "a/b", "mapTo": "c"}],
        "scaleStrategy": {"scaleGate": gates},
    }
    assert messages(cluster(workerGroupSpecs=[fine])) == []
    twice = {**group, "scaleStrategy": {"scaleGate": [gates[0], gates[0]]}}
    assert messages(cluster(workerGroupSpecs=[twice])) == [
        'spec.workerGroupSpecs[0].scaleStrategy.scaleGate[1]: Duplicate value: {"name":"kueue.k8s.io/quota-exceeded"}'
    ]
    assert messages(cluster(workerGroupSpecs=[{**group, "labelMappings": [{"mapTo": "c"}]}])) == [
        "spec.workerGroupSpecs[0].labelMappings[0].nodeLabel: Required value"
    ]


def test_transition_rules_are_skipped_offline() -> None:
    # `self == oldSelf` (managedBy, gcsFaultToleranceOptions.backend) needs an old object.
    assert (
        messages(
            cluster(managedBy="kueue.x-k8s.io/multikueue", gcsFaultToleranceOptions={"backend": "rocksdb"})
        )
        == []
    )


def test_embedded_kubernetes_types_are_checked() -> None:
    obj = cluster(
        workerGroupSpecs=[{"groupName": "g", "template": {"spec": {"containers": [{"image": "x"}]}}}]
    )
    assert messages(obj) == ["spec.workerGroupSpecs[0].template.spec.containers[0].name: Required value"]


def test_v1alpha1_uses_its_own_schema() -> None:
    obj = cluster()
    assert schemacheck.check(obj, "RayCluster", "v1alpha1") == [
        FieldError("spec.headGroupSpec.rayStartParams", "Required value")
    ]
    with pytest.raises(KeyError):
        schemacheck.check(obj, "RayCronJob", "v1alpha1")


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (
            {"type": "array", "maxItems": 1, "items": {"type": "string"}},
            ["a", "b"],
            "<nil>: Too many: 2: must have at most 1 item",
        ),
        (
            {"type": "integer", "maximum": 10},
            11,
            "<nil>: Invalid value: 11: <nil> in body should be less than or equal to 10",
        ),
        (
            {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
            0,
            "<nil>: Invalid value: 0: <nil> in body should be greater than 0",
        ),
        (
            {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}},
            {"when": "2026-01-01T00:00:00+02:00"},
            None,
        ),
    ],
)
def test_keywords_outside_our_crds(schema: dict[str, Any], value: Any, expected: str | None) -> None:
    assert [str(e) for e in schemacheck.errors_against(value, schema)] == ([expected] if expected else [])
