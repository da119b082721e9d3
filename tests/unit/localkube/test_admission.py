"""Admission of custom objects against the upstream ray.io schemas: a catalogue of refusals in the API server's
text, defaulting, pruning, transition rules, and the 422 Status body."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from localkube.admission.errors import AdmissionError, FieldError
from localkube.admission.schema import SchemaInvalid, admit, unknown_fields

UNCHECKED = (
    '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
    "correct the existing errors to complete validation"
)
QUANTITY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"


def pod_template(name: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "rayproject/ray:2.46.0"}]}}


BASE: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "x", "namespace": "default"},
    "spec": {
        "headGroupSpec": {"rayStartParams": {}, "template": pod_template("ray-head")},
        "workerGroupSpecs": [
            {
                "groupName": "small",
                "replicas": 1,
                "minReplicas": 1,
                "maxReplicas": 3,
                "template": pod_template("w"),
            }
        ],
    },
}


def condition(**overrides: Any) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "AllGood",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    } | overrides


def edit(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    obj = copy.deepcopy(BASE)
    change(obj)
    return obj


def spec_set(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda obj: obj["spec"].update(values)


def worker_set(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda obj: obj["spec"]["workerGroupSpecs"][0].update(values)


def with_status(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda obj: obj.update(status=values)


def limits(cpu: Any) -> Callable[[dict[str, Any]], None]:
    return spec_set(autoscalerOptions={"resources": {"limits": {"cpu": cpu}}})


CATALOGUE: list[tuple[str, Callable[[dict[str, Any]], object], list[str]]] = [
    (
        "missing required",
        lambda o: o["spec"].pop("headGroupSpec"),
        [
            "spec.headGroupSpec: Required value",
            UNCHECKED,
        ],
    ),
    (
        "null is absent",
        spec_set(headGroupSpec=None),
        [
            "spec.headGroupSpec: Required value",
            UNCHECKED,
        ],
    ),
    (
        "required in a list item",
        lambda o: o["spec"]["workerGroupSpecs"][0].pop("groupName"),
        [
            "spec.workerGroupSpecs[0].groupName: Required value",
            UNCHECKED,
        ],
    ),
    (
        "string for integer",
        worker_set(replicas="three"),
        [
            'spec.workerGroupSpecs[0].replicas: Invalid value: "string": '
            'spec.workerGroupSpecs[0].replicas in body must be of type integer: "string"',
            UNCHECKED,
        ],
    ),
    (
        "fraction for integer",
        worker_set(replicas=1.5),
        [
            'spec.workerGroupSpecs[0].replicas: Invalid value: "number": '
            'spec.workerGroupSpecs[0].replicas in body must be of type integer: "number"',
            UNCHECKED,
        ],
    ),
    (
        "object for array",
        spec_set(workerGroupSpecs={"a": 1}),
        [
            'spec.workerGroupSpecs: Invalid value: "object": spec.workerGroupSpecs in body must be of type array: "object"',
            UNCHECKED,
        ],
    ),
    (
        "string for object",
        lambda o: o.update(spec="big"),
        [
            'spec: Invalid value: "string": spec in body must be of type object: "string"',
            UNCHECKED,
        ],
    ),
    (
        "string for boolean",
        spec_set(suspend="yes"),
        [
            'spec.suspend: Invalid value: "string": spec.suspend in body must be of type boolean: "string"',
            UNCHECKED,
        ],
    ),
    (
        "integer in a map of strings",
        lambda o: o["spec"]["headGroupSpec"]["rayStartParams"].update({"num-cpus": 1}),
        [
            'spec.headGroupSpec.rayStartParams.num-cpus: Invalid value: "integer": '
            'spec.headGroupSpec.rayStartParams.num-cpus in body must be of type string: "integer"',
            UNCHECKED,
        ],
    ),
    (
        "bad enum",
        spec_set(upgradeStrategy={"type": "Rolling"}),
        [
            'spec.upgradeStrategy.type: Unsupported value: "Rolling": supported values: "Recreate", "None"',
            UNCHECKED,
        ],
    ),
    (
        "bad enum, nested",
        spec_set(authOptions={"mode": "basic"}),
        [
            'spec.authOptions.mode: Unsupported value: "basic": supported values: "disabled", "token"',
            UNCHECKED,
        ],
    ),
    (
        "pattern of a quantity",
        limits("lots"),
        [
            'spec.autoscalerOptions.resources.limits.cpu: Invalid value: "lots": '
            f"spec.autoscalerOptions.resources.limits.cpu in body should match '{QUANTITY}'"
        ],
    ),
    (
        "boolean for int-or-string",
        limits(True),
        [
            'spec.autoscalerOptions.resources.limits.cpu: Invalid value: "boolean": '
            'spec.autoscalerOptions.resources.limits.cpu in body must be of type integer,string: "boolean"',
            '<nil>: Invalid value: "": "spec.autoscalerOptions.resources.limits.cpu" must validate at least one schema (anyOf)',
            'spec.autoscalerOptions.resources.limits.cpu: Invalid value: "boolean": '
            'spec.autoscalerOptions.resources.limits.cpu in body must be of type integer: "boolean"',
            UNCHECKED,
        ],
    ),
    (
        "CEL rule with a message",
        spec_set(managedBy="someone-else"),
        [
            'spec.managedBy: Invalid value: "string": the managedBy field value must be either '
            "'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
        ],
    ),
    (
        "too long",
        with_status(conditions=[condition(reason="R" * 1025)]),
        [
            "status.conditions[0].reason: Too long: may not be more than 1024 bytes",
            UNCHECKED,
        ],
    ),
    (
        "date-time format",
        with_status(conditions=[condition(lastTransitionTime="yesterday")]),
        [
            'status.conditions[0].lastTransitionTime: Invalid value: "yesterday": '
            'status.conditions[0].lastTransitionTime in body must be of type date-time: "yesterday"',
            UNCHECKED,
        ],
    ),
    (
        "below minimum",
        with_status(conditions=[condition(observedGeneration=-1)]),
        [
            "status.conditions[0].observedGeneration: Invalid value: -1: "
            "status.conditions[0].observedGeneration in body should be greater than or equal to 0"
        ],
    ),
    (
        "enum of a condition status",
        with_status(conditions=[condition(status="Maybe")]),
        [
            'status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"',
            UNCHECKED,
        ],
    ),
    (
        "pattern of a condition reason",
        with_status(conditions=[condition(reason="not ok")]),
        [
            'status.conditions[0].reason: Invalid value: "not ok": '
            "status.conditions[0].reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"
        ],
    ),
    (
        "duplicate key in a map-type list",
        with_status(conditions=[condition(), condition(status="False")]),
        ['status.conditions[1]: Duplicate value: {"type":"Ready"}'],
    ),
    (
        "required in a map-type list item",
        spec_set(
            headGroupSpec={"template": pod_template("h"), "headService": {"spec": {"ports": [{"name": "x"}]}}}
        ),
        [
            "spec.headGroupSpec.headService.spec.ports[0].port: Required value",
            UNCHECKED,
        ],
    ),
    (
        "several causes",
        lambda o: (o["spec"].pop("headGroupSpec"), o["spec"].update(upgradeStrategy={"type": "Rolling"})),
        [
            'spec.upgradeStrategy.type: Unsupported value: "Rolling": supported values: "Recreate", "None"',
            "spec.headGroupSpec: Required value",
            UNCHECKED,
        ],
    ),
]


@pytest.mark.parametrize(
    ("change", "expected"), [(c, e) for _, c, e in CATALOGUE], ids=[n for n, _, _ in CATALOGUE]
)
def test_refusals_name_the_field_and_the_reason(
    raycluster_schema: dict[str, Any], change: Callable[[dict[str, Any]], object], expected: list[str]
) -> None:
    obj = edit(change)
    before = copy.deepcopy(obj)
    with pytest.raises(SchemaInvalid) as refused:
        admit(raycluster_schema, obj, None)
    assert [str(e) for e in refused.value.errors] == expected
    assert obj == before


def test_the_catalogue_is_large_enough() -> None:
    assert len(CATALOGUE) >= 20


def test_admission_error_has_the_api_servers_message_and_status(raycluster_schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaInvalid) as refused:
        admit(raycluster_schema, edit(CATALOGUE[-1][1]), None)
    error = AdmissionError("RayCluster", "ray.io", "x", refused.value.errors)
    assert error.message == (
        'RayCluster.ray.io "x" is invalid: [spec.upgradeStrategy.type: Unsupported value: "Rolling": '
        'supported values: "Recreate", "None", spec.headGroupSpec: Required value, '
        f"{UNCHECKED}]"
    )
    status = error.status
    assert (status["kind"], status["status"], status["code"], status["reason"]) == (
        "Status",
        "Failure",
        422,
        "Invalid",
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Rolling": supported values: "Recreate", "None"',
            "field": "spec.upgradeStrategy.type",
        },
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.headGroupSpec"},
        {"reason": "FieldValueInvalid", "message": UNCHECKED.removeprefix("<nil>: "), "field": "<nil>"},
    ]
    single = AdmissionError("RayCluster", "ray.io", "x", [FieldError("spec.headGroupSpec", "Required value")])
    assert single.message == 'RayCluster.ray.io "x" is invalid: spec.headGroupSpec: Required value'


def test_rules_run_when_no_error_blocks_them(raycluster_schema: dict[str, Any]) -> None:
    # A pattern failure does not block the CEL rules; a missing field does.
    bad_quantity = edit(lambda o: (limits("lots")(o), spec_set(managedBy="nobody")(o)))
    with pytest.raises(SchemaInvalid) as refused:
        admit(raycluster_schema, bad_quantity, None)
    assert [e.path for e in refused.value.errors] == [
        "spec.autoscalerOptions.resources.limits.cpu",
        "spec.managedBy",
    ]
    schema = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}
    with pytest.raises(SchemaInvalid) as refused:
        admit(schema, {}, None)
    assert [str(e) for e in refused.value.errors] == ["v: Required value"]  # no rules, no notice


def test_type_errors_carry_the_type_invalid_reason() -> None:
    error = FieldError(
        "spec.x",
        "Invalid value",
        "string",
        'spec.x in body must be of type integer: "string"',
        reason="FieldValueTypeInvalid",
    )
    assert (
        AdmissionError("K", "", "n", [error]).status["details"]["causes"][0]["reason"]
        == "FieldValueTypeInvalid"
    )
    assert AdmissionError("K", "", "n", [error]).message.startswith(
        'K "n" is invalid: spec.x: Invalid value: "string"'
    )


def test_defaults_are_applied_recursively(raycluster_schema: dict[str, Any]) -> None:
    obj = edit(
        lambda o: (
            o["spec"]["workerGroupSpecs"][0].pop("minReplicas")
            and o["spec"]["workerGroupSpecs"][0].pop("maxReplicas")
        )
    )
    obj["spec"]["networkPolicy"] = {}
    admitted = admit(raycluster_schema, obj, None)
    worker = admitted["spec"]["workerGroupSpecs"][0]
    assert (worker["minReplicas"], worker["maxReplicas"], worker["numOfHosts"]) == (0, 2147483647, 1)
    assert admitted["spec"]["networkPolicy"] == {"mode": "DenyAll"}
    assert worker["replicas"] == 1  # a given value is never overwritten
    assert "minReplicas" not in obj["spec"]["workerGroupSpecs"][0]  # the input is untouched


def test_unknown_fields_are_pruned_and_root_metadata_kept(raycluster_schema: dict[str, Any]) -> None:
    obj = edit(spec_set(bogus=1))
    obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["notAField"] = "x"
    obj["metadata"]["labels"] = {"a": "b"}
    obj["extra"] = True
    admitted = admit(raycluster_schema, obj, None)
    assert "bogus" not in admitted["spec"] and "extra" not in admitted
    assert "notAField" not in admitted["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert admitted["metadata"] == {"name": "x", "namespace": "default", "labels": {"a": "b"}}
    assert admitted["apiVersion"] == "ray.io/v1"


def test_integral_number_is_an_integer(raycluster_schema: dict[str, Any]) -> None:
    assert (
        admit(raycluster_schema, edit(worker_set(replicas=2.0)), None)["spec"]["workerGroupSpecs"][0][
            "replicas"
        ]
        == 2.0
    )


@pytest.mark.parametrize(
    ("old_value", "new_value", "expected"),
    [
        (
            "ray.io/kuberay-operator",
            "kueue.x-k8s.io/multikueue",
            ['spec.managedBy: Invalid value: "string": the managedBy field is immutable'],
        ),
        ("ray.io/kuberay-operator", "ray.io/kuberay-operator", []),
        (None, "kueue.x-k8s.io/multikueue", []),  # a transition rule needs an old value
    ],
)
def test_managed_by_transition_rule(
    raycluster_schema: dict[str, Any], old_value: str | None, new_value: str, expected: list[str]
) -> None:
    old = edit(spec_set(managedBy=old_value) if old_value else spec_set())
    new = edit(spec_set(managedBy=new_value))
    try:
        admit(raycluster_schema, new, old)
        found: list[str] = []
    except SchemaInvalid as refused:
        found = [str(e) for e in refused.errors]
    assert found == expected


def test_gcs_backend_is_immutable(raycluster_schema: dict[str, Any]) -> None:
    old = edit(spec_set(gcsFaultToleranceOptions={"backend": "redis", "redisAddress": "r:6379"}))
    new = edit(spec_set(gcsFaultToleranceOptions={"backend": "rocksdb", "redisAddress": "r:6379"}))
    with pytest.raises(SchemaInvalid) as refused:
        admit(raycluster_schema, new, old)
    assert [str(e) for e in refused.value.errors] == [
        'spec.gcsFaultToleranceOptions.backend: Invalid value: "string": gcsFaultToleranceOptions.backend is immutable'
    ]


def test_unchanged_invalid_fields_are_ratcheted(raycluster_schema: dict[str, Any]) -> None:
    stored = edit(spec_set(managedBy="legacy-value"))
    updated = edit(spec_set(managedBy="legacy-value", suspend=True))
    assert admit(raycluster_schema, updated, stored)["spec"]["suspend"] is True
    with pytest.raises(SchemaInvalid):
        admit(raycluster_schema, updated, None)


def test_rayjob_deletion_strategy_rules(upstream_crds: dict[str, dict[str, Any]]) -> None:
    schema = upstream_crds["rayjobs"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j"},
        "spec": {"entrypoint": "python x.py", "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}},
    }
    with pytest.raises(SchemaInvalid) as refused:
        admit(schema, job, None)
    assert [str(e) for e in refused.value.errors] == [
        'spec.deletionStrategy: Invalid value: "object": deletionStrategy requires either BOTH onSuccess and '
        "onFailure, OR the deletionRules field (cannot be empty)"
    ]


def schema_with_rule(rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                "x-kubernetes-validations": [rule],
            }
        },
    }


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            {"rule": "self.min <= self.max"},
            'spec: Invalid value: "object": failed rule: self.min <= self.max',
        ),
        (
            {
                "rule": "self.min <= self.max",
                "messageExpression": "'min ' + string(self.min) + ' exceeds max'",
            },
            'spec: Invalid value: "object": min 5 exceeds max',
        ),
        (
            {"rule": "self.min <= self.max", "message": "bad range", "reason": "FieldValueForbidden"},
            "spec: Forbidden: bad range",
        ),
        (
            {"rule": "self.min <= self.max", "message": "bad", "fieldPath": ".min"},
            'spec.min: Invalid value: "object": bad',
        ),
        (
            {"rule": "self.missing > 1"},
            'spec: Invalid value: "object": no such key: missing evaluating rule: self.missing > 1',
        ),
        (
            {"rule": "self.min / 0 == 1"},
            'spec: Invalid value: "object": division by zero evaluating rule: self.min / 0 == 1',
        ),
    ],
)
def test_cel_rule_messages(rule: dict[str, Any], expected: str) -> None:
    with pytest.raises(SchemaInvalid) as refused:
        admit(schema_with_rule(rule), {"spec": {"min": 5, "max": 1}}, None)
    assert [str(e) for e in refused.value.errors] == [expected]


def test_root_rule_reports_the_nil_path() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('a')"}]}
    with pytest.raises(SchemaInvalid) as refused:
        admit(schema, {"metadata": {"name": "b"}}, None)
    assert (
        str(refused.value.errors[0])
        == "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('a')"
    )


def test_preserve_unknown_fields_and_embedded_resources_keep_what_they_should() -> None:
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "embedded": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
            },
        },
    }
    obj = {
        "free": {"anything": {"goes": [1]}},
        "embedded": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "bogus": 1},
            "spec": {"a": "x", "b": 2},
        },
    }
    admitted = admit(schema, obj, None)
    assert admitted["free"] == {"anything": {"goes": [1]}}
    assert admitted["embedded"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"a": "x"},
    }


@pytest.mark.parametrize(
    ("node", "value", "expected"),
    [
        (
            {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            ["a", "b", "c"],
            "spec.v: Too many: 3: must have at most 2 items",
        ),
        (
            {"type": "array", "items": {"type": "string"}, "minItems": 1},
            [],
            "spec.v: Invalid value: 0: spec.v in body should have at least 1 items",
        ),
        (
            {"type": "string", "minLength": 2},
            "a",
            'spec.v: Invalid value: "a": spec.v in body should be at least 2 chars long',
        ),
        (
            {"type": "integer", "maximum": 5},
            7,
            "spec.v: Invalid value: 7: spec.v in body should be less than or equal to 5",
        ),
        (
            {"type": "integer", "maximum": 5, "exclusiveMaximum": True},
            5,
            "spec.v: Invalid value: 5: spec.v in body should be less than 5",
        ),
        (
            {"type": "number", "minimum": 0.5},
            0.25,
            "spec.v: Invalid value: 0.25: spec.v in body should be greater than or equal to 0.5",
        ),
        (
            {"type": "integer", "multipleOf": 3},
            7,
            "spec.v: Invalid value: 7: spec.v in body should be a multiple of 3",
        ),
        (
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            ["a", "a"],
            'spec.v[1]: Duplicate value: "a"',
        ),
        (
            {"type": "string", "format": "uuid"},
            "nope",
            'spec.v: Invalid value: "nope": spec.v in body must be of type uuid: "nope"',
        ),
        ({"type": "integer", "enum": [1, 2]}, 3, 'spec.v: Unsupported value: 3: supported values: "1", "2"'),
        (  # Go's `$` ends the text; Python's would also match before a final newline
            {"type": "string", "pattern": "^[a-z]+$"},
            "abc\n",
            "spec.v: Invalid value: \"abc\\n\": spec.v in body should match '^[a-z]+$'",
        ),
        (
            {"type": "string", "nullable": False},
            ["x"],
            'spec.v: Invalid value: "array": spec.v in body must be of type string: "array"',
        ),
    ],
)
def test_value_rules(node: dict[str, Any], value: Any, expected: str) -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"v": node}}}}
    with pytest.raises(SchemaInvalid) as refused:
        admit(schema, {"spec": {"v": value}}, None)
    assert [str(e) for e in refused.value.errors] == [expected]


def test_nullable_keeps_null_and_int32_has_no_range_check() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "string", "nullable": True},
            "i": {"type": "integer", "format": "int32"},
        },
    }
    assert admit(schema, {"n": None, "i": 2**40}, None) == {"n": None, "i": 2**40}


def test_a_boolean_is_not_the_number_one(raycluster_schema: dict[str, Any]) -> None:
    stored = edit(spec_set(suspend=True))
    with pytest.raises(SchemaInvalid) as refused:
        admit(raycluster_schema, edit(spec_set(suspend=1)), stored)
    assert [str(e) for e in refused.value.errors] == [
        'spec.suspend: Invalid value: "integer": spec.suspend in body must be of type boolean: "integer"',
        UNCHECKED,
    ]
    schema = {"type": "object", "properties": {"v": {"enum": [1, 2]}}}
    with pytest.raises(SchemaInvalid):
        admit(schema, {"v": True}, None)


@pytest.mark.parametrize(
    ("node", "value", "rule", "passes"),
    [
        (
            {"type": "string", "format": "date-time"},
            "2026-01-02T00:00:00Z",
            "self > timestamp('2026-01-01T00:00:00Z')",
            True,
        ),
        (
            {"type": "string", "format": "date-time"},
            "2025-01-02T00:00:00Z",
            "self > timestamp('2026-01-01T00:00:00Z')",
            False,
        ),
        ({"type": "string", "format": "duration"}, "90s", "self > duration('1m')", True),
        (
            {"type": "array", "items": {"type": "integer"}},
            [1, 2, 3],
            "self.isSorted() && self.indexOf(2) == 1",
            True,
        ),
        ({"type": "array", "items": {"type": "integer"}}, [3, 1], "self.isSorted()", False),
        ({"type": "string"}, "abc-123", "self.find('[0-9]+') == '123' && self.indexOf('-') == 3", True),
        ({"type": "number"}, 2, "self > 1.5", True),
    ],
)
def test_cel_environment(node: dict[str, Any], value: Any, rule: str, passes: bool) -> None:
    schema = {"type": "object", "properties": {"v": {**node, "x-kubernetes-validations": [{"rule": rule}]}}}
    try:
        admit(schema, {"v": value}, None)
        passed = True
    except SchemaInvalid:
        passed = False
    assert passed is passes


def test_optional_old_self_runs_on_create() -> None:
    rule = {
        "rule": "!oldSelf.hasValue() || self >= oldSelf.value()",
        "optionalOldSelf": True,
        "message": "may not shrink",
    }
    schema = {"type": "object", "properties": {"v": {"type": "integer", "x-kubernetes-validations": [rule]}}}
    assert admit(schema, {"v": 1}, None) == {"v": 1}
    assert admit(schema, {"v": 3}, {"v": 2}) == {"v": 3}
    with pytest.raises(SchemaInvalid, match='v: Invalid value: "integer": may not shrink'):
        admit(schema, {"v": 1}, {"v": 2})
    strict = {
        "type": "object",
        "properties": {
            "v": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "oldSelf.hasValue()", "optionalOldSelf": True}],
            }
        },
    }
    with pytest.raises(SchemaInvalid, match="failed rule: oldSelf.hasValue()"):
        admit(strict, {"v": 1}, None)


def test_embedded_resources_need_apiversion_and_kind() -> None:
    schema = {
        "type": "object",
        "properties": {
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            }
        },
    }
    with pytest.raises(SchemaInvalid) as refused:
        admit(schema, {"template": {"kind": "", "spec": {}}}, None)
    assert [str(e) for e in refused.value.errors] == [
        "template.apiVersion: Required value: must not be empty",
        'template.kind: Invalid value: "": must not be empty',
    ]


def test_list_duplicates_are_ratcheted_when_the_old_object_had_them() -> None:
    schema = {
        "type": "object",
        "properties": {"l": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}},
    }
    assert admit(schema, {"l": ["a", "a", "b"]}, {"l": ["a", "a"]}) == {"l": ["a", "a", "b"]}
    with pytest.raises(SchemaInvalid, match=r'l\[1\]: Duplicate value: "a"'):
        admit(schema, {"l": ["a", "a", "b"]}, {"l": ["a"]})


def test_unknown_fields_are_named_for_strict_field_validation(raycluster_schema: dict[str, Any]) -> None:
    obj = edit(spec_set(bogus=1))
    obj["spec"]["workerGroupSpecs"][0]["extra"] = {"a": 1}
    obj["metadata"]["labels"] = {"a": "b"}
    assert unknown_fields(raycluster_schema, obj) == ["spec.bogus", "spec.workerGroupSpecs[0].extra"]
    assert unknown_fields(raycluster_schema, BASE) == []
    assert "bogus" in obj["spec"]  # only a copy was pruned


def test_rules_name_awkward_properties_by_their_escaped_form() -> None:
    props = {"max-size": {"type": "integer"}, "namespace": {"type": "string"}, "a.b": {"type": "integer"}}
    rule = {
        "rule": "self.max__dash__size > self.a__dot__b && self.__namespace__ == 'x' && self.labels['k-1'] == 'v'"
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    **props,
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "x-kubernetes-validations": [rule],
            }
        },
    }
    spec = {"max-size": 2, "a.b": 1, "namespace": "x", "labels": {"k-1": "v"}}
    assert admit(schema, {"spec": spec}, None) == {"spec": spec}
    with pytest.raises(SchemaInvalid):
        admit(schema, {"spec": {**spec, "a.b": 5}}, None)


def test_root_rules_see_only_the_name_of_the_metadata() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "!has(self.metadata.labels) && self.metadata.name == 'n'"}],
    }
    assert admit(schema, {"metadata": {"name": "n", "labels": {"a": "b"}}}, None)["metadata"]["labels"] == {
        "a": "b"
    }


def test_schema_constraints_on_the_name_apply() -> None:
    schema = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}
        },
    }
    assert admit(schema, {"metadata": {"name": "short", "labels": {"a": "b"}}}, None)["metadata"][
        "labels"
    ] == {"a": "b"}
    with pytest.raises(SchemaInvalid, match=r"^metadata.name: Too long: may not be more than 5 bytes$"):
        admit(schema, {"metadata": {"name": "much-too-long"}}, None)
