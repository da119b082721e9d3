"""Server-side apply: field ownership in FieldsV1, merging, removal of unapplied fields, conflicts and force."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from localkube.patch import ApplyConflict, PatchError, record_update, server_side_apply

CONFIGMAP = ("", "v1", "ConfigMap")
DEPLOYMENT = ("apps", "v1", "Deployment")
NOW = "2026-01-01T00:00:00Z"


def config_map(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"app": "x"}},
        "data": data,
    }


def deployment(
    replicas: int | None = 2, image: str = "nginx", containers: list[str] | None = None
) -> dict[str, Any]:
    names = containers or ["web"]
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "x"}},
        "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": n, "image": image} for n in names]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def test_create_records_the_appliers_fields() -> None:
    created = server_side_apply(None, deployment(), "kubectl", False, DEPLOYMENT, now=NOW)
    assert created["spec"]["replicas"] == 2
    (entry,) = created["metadata"]["managedFields"]
    assert {k: v for k, v in entry.items() if k != "fieldsV1"} == {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": NOW,
        "fieldsType": "FieldsV1",
    }
    assert entry["fieldsV1"] == {
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},  # LabelSelector is an atomic map
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}},
            },
        }
    }


def test_reapplying_the_same_config_is_stable() -> None:
    created = server_side_apply(None, deployment(), "kubectl", False, DEPLOYMENT, now=NOW)
    again = server_side_apply(created, deployment(), "kubectl", False, DEPLOYMENT, now="2026-01-02T00:00:00Z")
    assert again == created
    changed = server_side_apply(
        created, deployment(replicas=3), "kubectl", False, DEPLOYMENT, now="2026-01-02T00:00:00Z"
    )
    assert changed["metadata"]["managedFields"][0]["time"] == "2026-01-02T00:00:00Z"


def test_conflict_with_an_update_manager_and_force() -> None:
    created = server_side_apply(None, deployment(), "kubectl", False, DEPLOYMENT, now=NOW)
    scaled = copy.deepcopy(created)
    scaled["spec"]["replicas"] = 5
    scaled = record_update(
        created, scaled, "kube-controller-manager", DEPLOYMENT, subresource="scale", now=NOW
    )
    assert managers(scaled)[("kube-controller-manager", "Update")] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in managers(scaled)[("kubectl", "Apply")]["f:spec"]

    with pytest.raises(ApplyConflict) as refused:
        server_side_apply(scaled, deployment(replicas=3), "kubectl", False, DEPLOYMENT)
    assert refused.value.message == (
        'Apply failed with 1 conflict: conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas'
    )
    status = refused.value.status
    assert (status["code"], status["reason"]) == (409, "Conflict")
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kube-controller-manager" with subresource "scale" using apps/v1',
            "field": ".spec.replicas",
        }
    ]

    forced = server_side_apply(scaled, deployment(replicas=3), "kubectl", True, DEPLOYMENT)
    assert forced["spec"]["replicas"] == 3
    assert [e["manager"] for e in forced["metadata"]["managedFields"]] == ["kubectl"]


def test_applying_an_equal_value_shares_ownership() -> None:
    created = server_side_apply(None, config_map(a="1"), "one", False, CONFIGMAP, now=NOW)
    shared = server_side_apply(created, config_map(a="1"), "two", False, CONFIGMAP, now=NOW)
    assert (
        managers(shared)[("one", "Apply")]
        == managers(shared)[("two", "Apply")]
        == {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    )
    # Dropping the field from one applier keeps it: the other still owns it.
    dropped = server_side_apply(shared, {**config_map(), "data": {}}, "one", False, CONFIGMAP, now=NOW)
    assert dropped["data"] == {"a": "1"}


def test_fields_no_longer_applied_are_removed() -> None:
    created = server_side_apply(None, config_map(a="1", b="2"), "kubectl", False, CONFIGMAP, now=NOW)
    config = config_map(a="1")
    del config["metadata"]["labels"]
    updated = server_side_apply(created, config, "kubectl", False, CONFIGMAP, now=NOW)
    assert updated["data"] == {"a": "1"}
    assert "labels" not in updated["metadata"]
    assert managers(updated)[("kubectl", "Apply")] == {"f:data": {"f:a": {}}}


def test_several_conflicts() -> None:
    created = server_side_apply(None, config_map(a="1", b="2"), "alpha", False, CONFIGMAP, now=NOW)
    edited = copy.deepcopy(created)
    edited["data"]["c"] = "3"
    edited = record_update(created, edited, "beta", CONFIGMAP, now=NOW)
    with pytest.raises(ApplyConflict) as refused:
        server_side_apply(edited, config_map(a="9", b="9", c="9"), "gamma", False, CONFIGMAP)
    assert refused.value.message == (
        'Apply failed with 3 conflicts: conflicts with "alpha":\n- .data.a\n- .data.b\nconflicts with "beta" using v1:\n- .data.c'
    )


def test_associative_list_items_belong_to_their_appliers() -> None:
    first = server_side_apply(None, deployment(containers=["a"]), "one", False, DEPLOYMENT, now=NOW)
    both = server_side_apply(first, deployment(containers=["b"]), "two", False, DEPLOYMENT, now=NOW)
    assert [c["name"] for c in both["spec"]["template"]["spec"]["containers"]] == ["a", "b"]
    only_b = server_side_apply(
        both, {**deployment(), "spec": {"replicas": 2}}, "one", False, DEPLOYMENT, now=NOW
    )
    assert [c["name"] for c in only_b["spec"]["template"]["spec"]["containers"]] == ["b"]


def test_objects_without_managed_fields_belong_to_before_first_apply() -> None:
    live = deployment(replicas=1)
    with pytest.raises(
        ApplyConflict, match='conflict with "before-first-apply" using apps/v1: .spec.replicas'
    ):
        server_side_apply(live, deployment(replicas=4), "kubectl", False, DEPLOYMENT)


def test_crd_list_map_keys_come_from_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "groups": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["groupName"],
                        "items": {
                            "type": "object",
                            "properties": {"groupName": {"type": "string"}, "replicas": {"type": "integer"}},
                        },
                    }
                },
            }
        },
    }
    gvk = ("example.com", "v1", "Thing")

    def thing(*groups: tuple[str, int]) -> dict[str, Any]:
        return {
            "apiVersion": "example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "t"},
            "spec": {"groups": [{"groupName": g, "replicas": r} for g, r in groups]},
        }

    created = server_side_apply(None, thing(("small", 1)), "one", False, gvk, schema, now=NOW)
    merged = server_side_apply(created, thing(("large", 2)), "two", False, gvk, schema, now=NOW)
    assert merged["spec"]["groups"] == [
        {"groupName": "small", "replicas": 1},
        {"groupName": "large", "replicas": 2},
    ]
    with pytest.raises(
        ApplyConflict, match=r'conflict with "one": \.spec\.groups\[groupName="small"\]\.replicas'
    ):
        server_side_apply(merged, thing(("small", 5)), "two", False, gvk, schema)
    # Without a schema the list is atomic: the second applier's list replaces the first's and conflicts.
    with pytest.raises(ApplyConflict, match=r"\.spec\.groups"):
        server_side_apply(
            server_side_apply(None, thing(("small", 1)), "one", False, gvk),
            thing(("large", 2)),
            "two",
            False,
            gvk,
        )


def test_kind_defaults_to_the_applied_objects() -> None:
    created = server_side_apply(None, deployment(), "kubectl", False, now=NOW)
    assert created == server_side_apply(None, deployment(), "kubectl", False, DEPLOYMENT, now=NOW)


def test_writes_may_replace_or_clear_managed_fields() -> None:
    created = server_side_apply(None, config_map(a="1"), "kubectl", False, CONFIGMAP, now=NOW)
    unaware = copy.deepcopy(created)
    unaware["metadata"]["managedFields"] = []
    assert record_update(created, unaware, "editor", CONFIGMAP, now=NOW) == created
    cleared = copy.deepcopy(created)
    cleared["metadata"]["managedFields"] = [{}]
    assert "managedFields" not in record_update(created, cleared, "editor", CONFIGMAP, now=NOW)["metadata"]
    # kubectl's migration from client-side apply rewrites the entries; the rewrite is kept.
    renamed = copy.deepcopy(created)
    renamed["metadata"]["managedFields"][0]["manager"] = "someone-else"
    assert [
        e["manager"]
        for e in record_update(created, renamed, "editor", CONFIGMAP, now=NOW)["metadata"]["managedFields"]
    ] == ["someone-else"]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {**config_map(), "metadata": {"name": "cm", "managedFields": []}},
            "metadata.managedFields must be nil",
        ),
        (
            {**config_map(), "apiVersion": "v2"},
            "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1",
        ),
    ],
)
def test_refused_apply_configurations(config: dict[str, Any], expected: str) -> None:
    with pytest.raises(PatchError) as refused:
        server_side_apply(None, config, "kubectl", False, CONFIGMAP)
    assert (refused.value.detail, refused.value.status["code"]) == (expected, 400)


def test_a_missing_list_map_key_takes_its_default() -> None:
    live = deployment()
    live["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    live = record_update(None, live, "kubectl-client-side-apply", DEPLOYMENT, now=NOW)
    config = deployment()
    config["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    applied = server_side_apply(live, config, "kubectl", False, DEPLOYMENT, now=NOW)
    assert applied["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "protocol": "TCP"}
    ]
    ports = managers(applied)[("kubectl", "Apply")]["f:spec"]["f:template"]["f:spec"]["f:containers"][
        'k:{"name":"web"}'
    ]["f:ports"]
    assert list(ports) == ['k:{"containerPort":80,"protocol":"TCP"}']


def test_inputs_are_not_mutated() -> None:
    created = server_side_apply(None, config_map(a="1"), "one", False, CONFIGMAP, now=NOW)
    edited = copy.deepcopy(created)
    edited["data"]["b"] = "2"
    snapshot = (copy.deepcopy(created), copy.deepcopy(edited))
    record_update(created, edited, "two", CONFIGMAP, now=NOW)
    server_side_apply(edited, config_map(), "one", False, CONFIGMAP, now=NOW)
    assert (created, edited) == snapshot


def test_list_item_keys_keep_unicode_as_it_is() -> None:
    # Found by tests/reliability/test_hostile_input.py: an escaped key (\ud83d\ude00, 12 bytes for one
    # character) made a 512 KiB container name cost 1.5 MiB in managedFields, over the store's limit.
    name = "web-😀"
    created = record_update(None, deployment(containers=[name]), "operator", DEPLOYMENT, now=NOW)
    containers = managers(created)[("operator", "Update")]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(containers) == ['k:{"name":"web-😀"}']
