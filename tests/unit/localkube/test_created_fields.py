"""A create's managedFields, written in one walk over the object (`created_fields`), are the ones the
set-based route gives (compare with nothing, drop the server-owned paths, encode): over every upstream
sample, built-in kinds typed and ray.io kinds under their CRD's schema, and over generated objects made of
the names those schemas declare, empty maps and lists, and list items that share a key."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localkube.admission import builtin
from localkube.patch import record_update
from localkube.patch.fieldset import compare, created_fields, encode_fields, without_server_owned
from support.shared import UPSTREAM_SAMPLES, yaml_documents


def set_route(obj: dict[str, Any], node: dict[str, Any] | None, typed: bool) -> dict[str, Any]:
    return encode_fields(without_server_owned(compare({}, obj, node, typed=typed).added))


def schema_of(obj: dict[str, Any], crds: dict[str, dict[str, Any]]) -> tuple[dict[str, Any] | None, bool]:
    """The schema a create of `obj` is recorded under, and whether it is a built-in (typed) kind."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    kind = str(obj.get("kind", ""))
    if group == "ray.io":
        crd = crds[kind.lower() + "s"]
        return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], False
    return builtin.schema_for((group, version, kind)), True


def upstream_documents() -> list[dict[str, Any]]:
    documents = []
    for path in sorted(UPSTREAM_SAMPLES.rglob("*.yaml")):
        documents += [d for d in yaml_documents(path) if isinstance(d, dict) and d.get("kind")]
    return documents


def test_every_upstream_sample_gets_the_set_routes_fields(upstream_crds: dict[str, dict[str, Any]]) -> None:
    documents = upstream_documents()
    assert len(documents) > 80
    for obj in documents:
        node, typed = schema_of(obj, upstream_crds)
        assert created_fields(obj, node, typed=typed) == set_route(obj, node, typed), obj["metadata"]


def test_a_pods_create_leaves_out_what_its_zero_value_holds() -> None:
    """`spec` of a built-in kind is a struct its zero value holds: no `.` of its own; a container item
    (a list-map item) has one; name and labels are the server's and the creator's."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]},
    }
    assert created_fields(pod, builtin.schema_for(("", "v1", "Pod")), typed=True) == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}
        },
    }


# Names the Pod and RayCluster schemas declare, a few they do not, and values that shape the walk.
KEYS = st.sampled_from(
    [
        "spec", "status", "metadata", "labels", "annotations", "name", "containers", "ports", "containerPort",
        "protocol", "env", "value", "volumes", "emptyDir", "resources", "limits", "nodeSelector", "finalizers",
        "headGroupSpec", "workerGroupSpecs", "groupName", "template", "rayStartParams", "conditions", "type",
        "selector", "matchLabels", "ownerReferences", "uid", "extra", "x",
    ]
)  # fmt: skip
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", "TCP", "c"]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=30,
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=6)
KINDS = st.sampled_from(
    [
        ("v1", "Pod"),
        ("v1", "Service"),
        ("v1", "ConfigMap"),
        ("apps/v1", "Deployment"),
        ("ray.io/v1", "RayCluster"),
    ]
)


@settings(max_examples=400, deadline=None)
@given(body=OBJECTS, kind=KINDS)
def test_generated_objects_get_the_set_routes_fields(
    upstream_crds: dict[str, dict[str, Any]], body: dict[str, Any], kind: tuple[str, str]
) -> None:
    obj = {**body, "apiVersion": kind[0], "kind": kind[1]}
    node, typed = schema_of(obj, upstream_crds)
    fields = created_fields(obj, node, typed=typed)
    if fields is None:  # a list held two items of one identity: record_update takes the set route
        created = record_update(None, obj, "m", None if typed else ("ray.io", "v1", "RayCluster"), node)
        entries = created["metadata"].get("managedFields", [])
        assert [e["fieldsV1"] for e in entries] in ([], [set_route(obj, node, typed)])
    else:
        assert fields == set_route(obj, node, typed)


@pytest.mark.parametrize("typed", [True, False])
def test_two_items_of_one_identity_fall_back_to_the_set_route(typed: bool) -> None:
    pod = {"spec": {"containers": [{"name": "c", "image": "a"}, {"name": "c", "args": ["x"]}]}}
    node = builtin.schema_for(("", "v1", "Pod"))
    assert created_fields(pod, node, typed=typed) is None
    created = record_update(None, {"apiVersion": "v1", "kind": "Pod", **pod}, "m", ("", "v1", "Pod"))
    (entry,) = created["metadata"]["managedFields"]
    containers = entry["fieldsV1"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"c"}': {".": {}, "f:args": {}, "f:image": {}, "f:name": {}}}
