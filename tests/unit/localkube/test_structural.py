"""The structural-schema check: upstream's CRDs pass, broken schemas are refused with the server's text."""

from __future__ import annotations

from typing import Any

import pytest

from localkube.admission.schema import check_structural

ROOT = "spec.versions[0].schema.openAPIV3Schema"


@pytest.mark.parametrize("name", ["rayclusters", "rayjobs", "rayservices", "raycronjobs"])
def test_upstream_crds_are_structural(upstream_crds: dict[str, dict[str, Any]], name: str) -> None:
    for index, version in enumerate(upstream_crds[name]["spec"]["versions"]):
        path = f"spec.versions[{index}].schema.openAPIV3Schema"
        assert check_structural(version["schema"]["openAPIV3Schema"], path) == []


def spec_with(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


SPEC = f"{ROOT}.properties[spec]"
BROKEN: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "untyped field",
        spec_with(replicas={"description": "no type"}),
        [f"{SPEC}.properties[replicas].type: Required value: must not be empty for specified object fields"],
    ),
    (
        "untyped items",
        spec_with(items={"type": "array", "items": {"properties": {"a": {"type": "string"}}}}),
        [f"{SPEC}.properties[items].items.type: Required value: must not be empty for specified array items"],
    ),
    (
        "array without items",
        spec_with(items={"type": "array"}),
        [f"{SPEC}.properties[items].items: Required value: must be specified"],
    ),
    (
        "properties and additionalProperties",
        spec_with(
            m={
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            }
        ),
        [
            f"{SPEC}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        ],
    ),
    (
        "root not an object",
        {"type": "string"},
        [f'{ROOT}.type: Invalid value: "string": must be object at the root'],
    ),
    ("untyped root", {"properties": {}}, [f"{ROOT}.type: Required value: must not be empty at the root"]),
    (
        "metadata beyond name",
        {
            "type": "object",
            "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}},
        },
        [
            f"{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ],
    ),
    (
        "type in anyOf",
        spec_with(v={"type": "string", "anyOf": [{"type": "string", "maxLength": 3}, {"minLength": 1}]}),
        [f"{SPEC}.properties[v].anyOf[0].type: Forbidden: must be empty to be structural"],
    ),
    (
        "map list without keys",
        spec_with(
            l={
                "type": "array",
                "x-kubernetes-list-type": "map",
                "items": {"type": "object", "properties": {"n": {"type": "string"}}},
            }
        ),
        [
            f"{SPEC}.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
        ],
    ),
    (
        "map keys that are not item properties",
        spec_with(
            l={
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"],
                "items": {"type": "object", "properties": {"n": {"type": "string"}}},
            }
        ),
        [
            f'{SPEC}.properties[l].x-kubernetes-list-map-keys: Invalid value: ["id"]: entries must all be names of item properties'
        ],
    ),
    (
        "unknown list type",
        spec_with(l={"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}),
        [
            f'{SPEC}.properties[l].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"'
        ],
    ),
    (
        "unknown map type",
        spec_with(
            m={"type": "object", "x-kubernetes-map-type": "loose", "additionalProperties": {"type": "string"}}
        ),
        [
            f'{SPEC}.properties[m].x-kubernetes-map-type: Unsupported value: "loose": supported values: "atomic", "granular"'
        ],
    ),
    (
        "unknown rule reason",
        spec_with(
            n={"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0", "reason": "Nope"}]}
        ),
        [
            f'{SPEC}.properties[n].x-kubernetes-validations[0].reason: Unsupported value: "Nope": supported values: '
            '"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"'
        ],
    ),
    (
        "uniqueItems",
        spec_with(l={"type": "array", "uniqueItems": True, "items": {"type": "string"}}),
        [
            f"{SPEC}.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        ],
    ),
    (
        "$ref",
        spec_with(r={"$ref": "#/definitions/x", "type": "object"}),
        [f"{SPEC}.properties[r].$ref: Forbidden: $ref is not supported"],
    ),
    (
        "unknown type",
        spec_with(t={"type": "float"}),
        [
            f'{SPEC}.properties[t].type: Unsupported value: "float": supported values: "array", "boolean", "integer", "number", "object", "string"'
        ],
    ),
    (
        "preserve-unknown-fields false",
        spec_with(o={"type": "object", "x-kubernetes-preserve-unknown-fields": False}),
        [
            f"{SPEC}.properties[o].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
        ],
    ),
    (
        "embedded resource not an object",
        spec_with(e={"type": "string", "x-kubernetes-embedded-resource": True}),
        [
            f'{SPEC}.properties[e].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true',
            f"{SPEC}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true "
            "without x-kubernetes-preserve-unknown-fields",
        ],
    ),
    (
        "rule that does not compile",
        spec_with(v={"type": "string", "x-kubernetes-validations": [{"rule": "self ==== 1"}]}),
        [f"{SPEC}.properties[v].x-kubernetes-validations[0].rule: Invalid value"],
    ),
    (
        "rule without an expression",
        spec_with(v={"type": "string", "x-kubernetes-validations": [{"message": "m"}]}),
        [f"{SPEC}.properties[v].x-kubernetes-validations[0].rule: Required value: rule is not specified"],
    ),
    (
        "bad pattern",
        spec_with(v={"type": "string", "pattern": "("}),
        [f'{SPEC}.properties[v].pattern: Invalid value: "(": must be a valid regular expression'],
    ),
]


@pytest.mark.parametrize(
    ("schema", "expected"), [(s, e) for _, s, e in BROKEN], ids=[n for n, _, _ in BROKEN]
)
def test_broken_schemas_are_refused(schema: dict[str, Any], expected: list[str]) -> None:
    found = [str(error) for error in check_structural(schema)]
    assert len(found) == len(expected), found
    for message, prefix in zip(found, expected, strict=True):
        assert message.startswith(prefix)


@pytest.mark.parametrize(
    "schema",
    [
        spec_with(
            q={
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": "^[0-9]+$",
            }
        ),
        spec_with(free={"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        spec_with(anything={"x-kubernetes-preserve-unknown-fields": True}),
        spec_with(
            e={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            }
        ),
        {
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}
            },
        },
        spec_with(v={"type": "string", "allOf": [{"minLength": 1}, {"maxLength": 5}]}),
        # RE2's flags past the start (Kueue's CRDs: AdmissionCheck's parameters.kind), which Python refuses.
        spec_with(kind={"type": "string", "pattern": "^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"}),
    ],
)
def test_legal_schemas_pass(schema: dict[str, Any]) -> None:
    assert check_structural(schema) == []


def test_defaults_must_fit_their_schema() -> None:
    schema = spec_with(
        n={"type": "integer", "default": "x"},
        o={"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "1", "b": 2}},
        e={"type": "string", "enum": ["a"], "default": "b"},
        ok={"type": "object", "properties": {"a": {"type": "integer", "default": 1}}, "default": {}},
    )
    assert [str(error) for error in check_structural(schema)] == [
        f'{SPEC}.properties[n].default: Invalid value: "string":  in body must be of type integer: "string"',
        f'{SPEC}.properties[o].default: Invalid value: {{"a":"1","b":2}}: must not have unknown fields',
        f'{SPEC}.properties[e].default: Unsupported value: "b": supported values: "a"',
    ]
