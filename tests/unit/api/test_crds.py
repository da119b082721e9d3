"""The generated CRDs: current on disk, the same as upstream's, structural, and printed by `kuberay crds`."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cel
import pytest
from typer.testing import CliRunner

from kuberay.api import crd, k8sschema
from kuberay.api.base import KubeModel, OpenAPI
from kuberay.cli import app
from kubesemantics.quantity import OPENAPI_PATTERN
from support.shared import UPSTREAM_CRDS, upstream_crd

DEPLOYED = Path(__file__).resolve().parents[3] / "deploy" / "crds"
UPSTREAM = UPSTREAM_CRDS
MANIFESTS = {crd.file_name(manifest): manifest for manifest in crd.crds()}

# --- upstream v1.8's additions to RayClusterSpec --------------------------------------------------------
# The reference CRDs are upstream's v1.7.0. Ours add exactly these v1.8 fields (v1 only: v1alpha1 takes no
# new field), each under every RayClusterSpec a CRD embeds; everything else must still equal v1.7.0. The
# v1.8 shapes are read from the PRs named (see each); they are the CRD's part of the contract.
INT32 = {"type": "integer", "format": "int32"}
V1_8_ADDITIONS: dict[str, tuple[str, dict[str, Any]]] = {
    # Node Label Delivery: kuberay#5260's `topology.labelMappings`, flattened onto the group by #5329.
    ".workerGroupSpecs[].labelMappings": (
        "kuberay#5260, #5329",
        {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"nodeLabel": {"type": "string"}, "mapTo": {"type": "string"}},
                "required": ["nodeLabel"],
            },
        },
    ),
    ".workerGroupSpecs[].scaleStrategy.scaleGate": (
        "kuberay#5094",
        {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
    ),
    # kuberay#4910's `activePassiveHead`, renamed and given its CEL rules by #5289.
    ".gcsFaultToleranceOptions.activePassiveOptions": (
        "kuberay#4910, #5289",
        {
            "type": "object",
            "properties": {
                "leaseDurationSeconds": {**INT32, "default": 15, "minimum": 1},
                "renewDeadlineSeconds": {**INT32, "default": 10, "minimum": 1},
                "retryPeriodSeconds": {**INT32, "default": 2, "minimum": 1},
            },
            "x-kubernetes-validations": [
                {
                    "rule": "self.leaseDurationSeconds > self.renewDeadlineSeconds",
                    "message": "leaseDurationSeconds must be greater than renewDeadlineSeconds",
                },
                {
                    "rule": "self.renewDeadlineSeconds > self.retryPeriodSeconds",
                    "message": "renewDeadlineSeconds must be greater than retryPeriodSeconds",
                },
            ],
        },
    ),
}
# Where each CRD's v1 schema embeds a RayClusterSpec.
CLUSTER_SPECS = {
    "ray.io_rayclusters.yaml": ".spec",
    "ray.io_rayjobs.yaml": ".spec.rayClusterSpec",
    "ray.io_rayservices.yaml": ".spec.rayClusterConfig",
    "ray.io_raycronjobs.yaml": ".spec.jobTemplate.rayClusterSpec",
}


def _parent_and_name(root: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The schema holding the last property of `path` (`.a[].b`: properties, `[]` items) and its name."""
    *steps, name = re.findall(r"\.(\w+)(\[\])?", path)
    node = root
    for step, items in steps:
        node = node["properties"][step]
        if items:
            node = node["items"]
    if name[1]:
        raise ValueError(f"{path} ends in items")
    return node, name[0]


def v1_8_additions(name: str, manifest: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each v1.8 addition of a CRD's v1 schema: its full path and its schema."""
    root = manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path in V1_8_ADDITIONS:
        parent, prop = _parent_and_name(root, CLUSTER_SPECS[name] + path)
        yield CLUSTER_SPECS[name] + path, parent["properties"].get(prop, {})


def without_v1_8_additions(name: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """A copy of the manifest without the v1.8 additions (each must be there): what v1.7.0 generates."""
    stripped = copy.deepcopy(manifest)
    root = stripped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path in V1_8_ADDITIONS:
        parent, prop = _parent_and_name(root, CLUSTER_SPECS[name] + path)
        assert prop in parent["properties"], f"{name}: v1.8 addition {path} missing"
        del parent["properties"][prop]
    return stripped


def test_committed_files_are_current() -> None:
    stale = [
        name
        for name, text in crd.render_files().items()
        if not (DEPLOYED / name).is_file() or (DEPLOYED / name).read_text() != text
    ]
    assert not stale, (
        f"deploy/crds/{stale} out of date with the models; regenerate: kuberay crds --output-dir deploy/crds"
    )


# --- the same as upstream --------------------------------------------------------------------------------
def schema_differences(upstream: dict[str, Any], ours: dict[str, Any], path: str) -> Iterator[str]:
    """Every keyword or sub-schema that is missing, extra or different, named by its path (`.name` for a
    property, `[]` for items, `{}` for additionalProperties)."""
    for key in sorted(upstream.keys() | ours.keys()):
        if key not in ours:
            yield f"{path}: missing {key}: {upstream[key]!r}"
        elif key not in upstream:
            yield f"{path}: extra {key}: {ours[key]!r}"
        elif key == "properties":
            for name in sorted(upstream[key].keys() | ours[key].keys()):
                if name not in ours[key]:
                    yield f"{path}.{name}: missing property"
                elif name not in upstream[key]:
                    yield f"{path}.{name}: extra property"
                else:
                    yield from schema_differences(upstream[key][name], ours[key][name], f"{path}.{name}")
        elif key in ("items", "additionalProperties") and isinstance(upstream[key], dict):
            yield from schema_differences(upstream[key], ours[key], path + ("[]" if key == "items" else "{}"))
        elif upstream[key] != ours[key]:
            yield f"{path}: {key} upstream {upstream[key]!r}, ours {ours[key]!r}"


def test_schema_differences_sees_every_kind_of_change() -> None:
    upstream = {
        "type": "object",
        "properties": {"a": {"type": "string", "enum": ["x"]}, "b": {"type": "integer"}},
    }
    ours = {"type": "object", "properties": {"a": {"type": "string", "enum": ["y"], "default": "y"}, "c": {}}}
    assert list(schema_differences(upstream, ours, "")) == [
        ".a: extra default: 'y'",
        ".a: enum upstream ['x'], ours ['y']",
        ".b: missing property",
        ".c: extra property",
    ]


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_same_as_upstream(name: str) -> None:
    upstream = upstream_crd(name)
    ours = without_v1_8_additions(name, MANIFESTS[name])
    assert (ours["apiVersion"], ours["kind"], ours["metadata"]["name"]) == (
        upstream["apiVersion"],
        upstream["kind"],
        upstream["metadata"]["name"],
    )
    for key in ("group", "names", "scope"):
        assert ours["spec"][key] == upstream["spec"][key], key
    assert [v["name"] for v in ours["spec"]["versions"]] == [v["name"] for v in upstream["spec"]["versions"]]
    differences = []
    for theirs, mine in zip(upstream["spec"]["versions"], ours["spec"]["versions"], strict=True):
        for key in sorted((theirs.keys() | mine.keys()) - {"schema"}):
            if theirs.get(key) != mine.get(key):
                differences.append(
                    f"{theirs['name']}: {key} upstream {theirs.get(key)!r}, ours {mine.get(key)!r}"
                )
        differences += schema_differences(
            theirs["schema"]["openAPIV3Schema"], mine["schema"]["openAPIV3Schema"], theirs["name"]
        )
    assert not differences, f"{len(differences)} differences from upstream:\n" + "\n".join(differences)


def test_rendered_like_controller_gen() -> None:
    # Upstream's files differ from ours only by controller-gen's version annotation (and v1.8's additions).
    for name, manifest in MANIFESTS.items():
        upstream = (UPSTREAM / name).read_text()
        assert crd.render_manifest(without_v1_8_additions(name, manifest)) == upstream.replace(
            "  annotations:\n    controller-gen.kubebuilder.io/version: v0.16.5\n", ""
        )


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_v1_8_additions_have_the_shapes_of_their_prs(name: str) -> None:
    for path, schema in v1_8_additions(name, MANIFESTS[name]):
        pr, expected = V1_8_ADDITIONS[path.removeprefix(CLUSTER_SPECS[name])]
        assert schema == expected, f"{name} {path} ({pr})"
    # v1alpha1 is frozen: no v1.8 field reaches it.
    for version in MANIFESTS[name]["spec"]["versions"][1:]:
        text = repr(version["schema"])
        assert not [word for word in ("labelMappings", "scaleGate", "activePassiveOptions") if word in text]


# --- structural schemas ----------------------------------------------------------------------------------
LIST_TYPES = {"atomic", "set", "map"}
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def structural_violations(node: dict[str, Any], path: str) -> Iterator[str]:
    """The apiextensions.k8s.io/v1 structural-schema rules (and extension placement) that `node` breaks."""
    kind = node.get("type")
    for forbidden in ("$ref", "definitions", "allOf", "oneOf", "not", "uniqueItems"):
        if forbidden in node:
            yield f"{path}: {forbidden} is not allowed"
    if node.get("x-kubernetes-int-or-string"):
        if kind is not None or node.get("anyOf", INT_OR_STRING) != INT_OR_STRING:
            yield f"{path}: int-or-string takes no type and only anyOf [integer, string]"
    elif "anyOf" in node:
        yield f"{path}: anyOf outside int-or-string"
    elif kind not in ("object", "array", "string", "integer", "number", "boolean") and not node.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        yield f"{path}: no type"
    if "properties" in node and "additionalProperties" in node:
        yield f"{path}: properties beside additionalProperties"
    if node.get("additionalProperties") is False:
        yield f"{path}: additionalProperties: false"
    if (
        "properties" in node or "additionalProperties" in node or "x-kubernetes-map-type" in node
    ) and kind != "object":
        yield f"{path}: object keywords on type {kind}"
    if ("items" in node) != (kind == "array"):
        yield f"{path}: arrays, and only arrays, have items"
    if node.get("x-kubernetes-map-type", "granular") not in ("granular", "atomic"):
        yield f"{path}: bad x-kubernetes-map-type"
    list_type = node.get("x-kubernetes-list-type")
    if list_type is not None and (kind != "array" or list_type not in LIST_TYPES):
        yield f"{path}: bad x-kubernetes-list-type {list_type!r}"
    if ("x-kubernetes-list-map-keys" in node) != (list_type == "map"):
        yield f"{path}: list-map-keys go with list-type map"
    if list_type == "map":
        item = node["items"]
        for key in node.get("x-kubernetes-list-map-keys", ()):
            prop = item.get("properties", {}).get(key)
            if prop is None or prop.get("type") not in ("string", "integer", "boolean", "number"):
                yield f"{path}: map key {key} is not a scalar property of the items"
            elif key not in item.get("required", ()) and "default" not in prop:
                yield f"{path}: map key {key} is neither required nor defaulted"
    if list_type == "set" and node["items"].get("type") not in ("string", "integer", "boolean", "number"):
        yield f"{path}: list-type set of non-scalars"
    for required in node.get("required", ()):
        if required not in node.get("properties", {}):
            yield f"{path}: required {required} is not a property"
    for validation in node.get("x-kubernetes-validations", ()):
        try:
            cel.compile(validation["rule"])
        except ValueError as error:
            yield f"{path}: CEL rule does not compile: {error}"
    for name, sub in node.get("properties", {}).items():
        yield from structural_violations(sub, f"{path}.{name}")
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(node.get(key), dict):
            yield from structural_violations(node[key], path + suffix)


@pytest.mark.parametrize("kind", [k.kind for k in crd.KINDS])
def test_structural(kind: str) -> None:
    for version in next(k for k in crd.KINDS if k.kind == kind).versions:
        root = crd.schema(kind, version.name)
        assert root["type"] == "object"
        # Top-level metadata may restrict only name and generateName; ours leaves it to the API server.
        assert root["properties"]["metadata"] == {"type": "object"}
        assert "required" not in root
        violations = list(structural_violations(root, f"{kind}/{version.name}"))
        assert not violations, "\n".join(violations)


def test_structural_violations_are_found() -> None:
    bad = {
        "type": "object",
        "properties": {
            "a": {"properties": {}, "additionalProperties": {"type": "string"}},
            "b": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map"},
            "c": {"$ref": "#/x"},
        },
    }
    assert [v.split(": ", 1)[1] for v in structural_violations(bad, "")] == [
        "no type",
        "properties beside additionalProperties",
        "object keywords on type None",
        "list-map-keys go with list-type map",
        "$ref is not allowed",
        "no type",
    ]


# --- the generator on small models -----------------------------------------------------------------------
def test_model_schema_follows_the_markers() -> None:
    from typing import Annotated, ClassVar, Literal

    from pydantic import Field

    from kuberay.api.base import Int32, Quantity, Required, Rule

    class Inner(KubeModel):
        __crd_rules__: ClassVar[tuple[Rule, ...]] = (Rule("has(self.x)"),)
        x: Annotated[Int32, OpenAPI({"default": 3}), Required()] = 3

    class Outer(KubeModel):
        mode: Literal["a", "b"] | None = None
        size: Quantity | None = None
        inner: list[Inner] = Field(alias="innerList")
        name: Annotated[str, Rule("self == oldSelf", "immutable")] = "n"

    assert crd.model_schema(Outer) == {
        "type": "object",
        "required": ["innerList"],
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "size": {
                "anyOf": INT_OR_STRING,
                "x-kubernetes-int-or-string": True,
                "pattern": OPENAPI_PATTERN,
            },
            "innerList": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["x"],
                    "properties": {"x": {"type": "integer", "format": "int32", "default": 3}},
                    "x-kubernetes-validations": [{"rule": "has(self.x)"}],
                },
            },
            "name": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}],
            },
        },
    }


def test_unsupported_type_names_the_field() -> None:
    class Odd(KubeModel):
        when: complex

    with pytest.raises(crd.UnsupportedType, match=r"Odd\.when"):
        crd.model_schema(Odd)


def test_schema_lookup() -> None:
    assert crd.schema("RayCluster", "v1alpha1")["properties"]["spec"]["required"] == ["headGroupSpec"]
    assert [m["spec"]["names"]["kind"] for m in crd.crds()] == [
        "RayCluster",
        "RayJob",
        "RayService",
        "RayCronJob",
    ]
    with pytest.raises(KeyError, match="RayCronJob has no version 'v1alpha1'"):
        crd.schema("RayCronJob", "v1alpha1")
    with pytest.raises(KeyError, match="no ray.io kind 'Pod'"):
        crd.schema("Pod")


# --- the command -----------------------------------------------------------------------------------------
def test_kuberay_crds_prints_four_documents(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["crds"])
    assert result.exit_code == 0, result.output
    # Each file is one YAML document that equals upstream's (test_rendered_like_controller_gen): the stream
    # is the four, each opened by `---`, in upstream's order (not parsed again: 4 MB of YAML).
    assert result.output == "".join(crd.render_files().values())
    documents = result.output.split("---\n")[1:]
    assert [re.search(r"^metadata:\n  name: (\S+)$", d, re.MULTILINE)[1] for d in documents] == [
        "rayclusters.ray.io",
        "rayjobs.ray.io",
        "rayservices.ray.io",
        "raycronjobs.ray.io",
    ]
    result = CliRunner().invoke(app, ["crds", "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert {p.name: p.read_text() for p in (tmp_path / "out").iterdir()} == crd.render_files()


def test_k8s_expansion() -> None:
    port = k8sschema.expand("io.k8s.api.core.v1.ContainerPort")
    assert port["required"] == ["containerPort"] and port["properties"]["protocol"] == {
        "type": "string",
        "default": "TCP",
    }
    port["required"].append("mutated")
    assert k8sschema.expand("io.k8s.api.core.v1.ContainerPort")["required"] == ["containerPort"]
    with pytest.raises(k8sschema.UnknownDefinition, match="io.k8s.api.core.v1.Nope"):
        k8sschema.expand("io.k8s.api.core.v1.Nope")
