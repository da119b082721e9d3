"""JSON, merge and strategic merge patches: the Kubernetes docs' examples and evanphx/json-patch's errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from localkube.admission import builtin
from localkube.patch import PatchError, json_patch, merge_patch, strategic_merge_patch

DEPLOYMENT = ("apps", "v1", "Deployment")


def deployment() -> dict[str, Any]:
    """The docs' patch-demo Deployment (kubernetes.io, "Update API Objects in Place Using kubectl patch")."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "patch-demo",
            "finalizers": ["a", "b"],
            "labels": {"app": "nginx", "tier": "web"},
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "nginx"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {
                    "containers": [
                        {
                            "name": "patch-demo-ctr",
                            "image": "nginx",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "args": ["--x"],
                        }
                    ],
                    "tolerations": [{"effect": "NoSchedule", "key": "dedicated", "value": "test-team"}],
                },
            },
        },
    }


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def smp(patch: dict[str, Any]) -> dict[str, Any]:
    original = deployment()
    patched = strategic_merge_patch(original, patch, DEPLOYMENT)
    assert original == deployment()
    return patched


def template_patch(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


def test_new_container_merges_by_name_and_comes_first() -> None:
    patched = smp(template_patch({"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}))
    assert [(c["name"], c["image"]) for c in pod_spec(patched)["containers"]] == [
        ("patch-demo-ctr-2", "redis"),
        ("patch-demo-ctr", "nginx"),
    ]


def test_tolerations_have_no_strategy_and_are_replaced() -> None:
    patched = smp(
        template_patch({"tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]})
    )
    assert pod_spec(patched)["tolerations"] == [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]


def test_merge_patch_replaces_the_containers_list() -> None:
    patched = merge_patch(
        deployment(),
        template_patch(
            {"containers": [{"name": "patch-demo-ctr-3", "image": "gcr.io/google-samples/hello-app:2.0"}]}
        ),
    )
    assert pod_spec(patched)["containers"] == [
        {"name": "patch-demo-ctr-3", "image": "gcr.io/google-samples/hello-app:2.0"}
    ]


def test_env_merges_by_name_with_delete_directive() -> None:
    container = {
        "name": "patch-demo-ctr",
        "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}, {"name": "A", "$patch": "delete"}],
    }
    patched = smp(template_patch({"containers": [container]}))
    (merged,) = pod_spec(patched)["containers"]
    assert merged["env"] == [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]
    assert merged["image"] == "nginx" and merged["args"] == ["--x"]


def test_existing_item_keeps_its_place() -> None:
    original = deployment()
    pod_spec(original)["containers"].append({"name": "second", "image": "busybox"})
    patched = strategic_merge_patch(
        original, template_patch({"containers": [{"name": "patch-demo-ctr", "image": "nginx:2"}]}), DEPLOYMENT
    )
    assert [(c["name"], c["image"]) for c in pod_spec(patched)["containers"]] == [
        ("patch-demo-ctr", "nginx:2"),
        ("second", "busybox"),
    ]


@pytest.mark.parametrize(
    ("patch", "expected_strategy"),
    [
        ({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, {"type": "Recreate"}),
        (
            {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None}}},
            {"type": "Recreate"},
        ),
        ({"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}}, {"type": "Recreate"}),
        ({"spec": {"strategy": {"rollingUpdate": None}}}, {"type": "RollingUpdate"}),
        ({"spec": {"strategy": {"$patch": "delete"}}}, None),
    ],
)
def test_map_directives(patch: dict[str, Any], expected_strategy: dict[str, Any] | None) -> None:
    assert smp(patch)["spec"].get("strategy") == expected_strategy


def test_list_replace_directive() -> None:
    patched = smp(template_patch({"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}))
    assert pod_spec(patched)["containers"] == [{"name": "only", "image": "x"}]


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"metadata": {"finalizers": ["c"]}}, ["c", "a", "b"]),
        ({"metadata": {"finalizers": ["b", "c"]}}, ["a", "b", "c"]),
        ({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, ["b"]),
        ({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}, ["b", "a"]),
    ],
)
def test_primitive_list_with_merge_strategy(patch: dict[str, Any], expected: list[str]) -> None:
    assert smp(patch)["metadata"]["finalizers"] == expected


def test_labels_merge_and_null_deletes() -> None:
    assert smp({"metadata": {"labels": {"tier": None, "env": "prod"}}})["metadata"]["labels"] == {
        "app": "nginx",
        "env": "prod",
    }


def test_set_element_order_of_containers() -> None:
    original = deployment()
    pod_spec(original)["containers"].append({"name": "second", "image": "busybox"})
    patch = template_patch(
        {
            "$setElementOrder/containers": [{"name": "second"}, {"name": "patch-demo-ctr"}],
            "containers": [{"name": "second", "image": "busybox:2"}],
        }
    )
    patched = strategic_merge_patch(original, patch, DEPLOYMENT)
    assert [c["name"] for c in pod_spec(patched)["containers"]] == ["second", "patch-demo-ctr"]


def test_missing_merge_key_is_refused() -> None:
    with pytest.raises(PatchError, match="does not contain declared merge key: name"):
        smp(template_patch({"containers": [{"image": "x"}]}))


def test_unknown_kind_merges_maps_and_replaces_lists() -> None:
    doc = {"spec": {"a": {"x": 1}, "items": [1, 2]}}
    assert strategic_merge_patch(
        doc, {"spec": {"a": {"y": 2}, "items": [3]}}, ("ray.io", "v1", "RayCluster")
    ) == {"spec": {"a": {"x": 1, "y": 2}, "items": [3]}}


def test_json_patch_operations() -> None:
    doc = {"spec": {"replicas": 2, "list": ["a", "b"], "m": {"k": "v"}}}
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/spec/replicas", "value": 2},
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/spec/list/1", "value": "x"},
        {"op": "add", "path": "/spec/list/-", "value": "z"},
        {"op": "remove", "path": "/spec/list/0"},
        {"op": "copy", "from": "/spec/m", "path": "/spec/n"},
        {"op": "move", "from": "/spec/m/k", "path": "/spec/moved"},
        {"op": "add", "path": "/spec/a~1b", "value": 1},
    ]
    before = copy.deepcopy(doc)
    assert json_patch(doc, ops) == {
        "spec": {"replicas": 3, "list": ["x", "b", "z"], "m": {}, "n": {"k": "v"}, "moved": "v", "a/b": 1}
    }
    assert doc == before


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (
            {"op": "test", "path": "/spec/replicas", "value": 5},
            "testing value /spec/replicas failed: test failed",
        ),
        (
            {"op": "test", "path": "/spec/replicas", "value": True},
            "testing value /spec/replicas failed: test failed",
        ),
        (
            {"op": "remove", "path": "/spec/nope"},
            "error in remove for path: '/spec/nope': Unable to remove nonexistent key: nope: missing value",
        ),
        (
            {"op": "add", "path": "/spec/a/b", "value": 1},
            'add operation does not apply: doc is missing path: "/spec/a/b": missing value',
        ),
        (
            {"op": "replace", "path": "/spec/list/5", "value": 1},
            "replace operation does not apply: doc is missing key: /spec/list/5: missing value",
        ),
        (
            {"op": "add", "path": "/spec/list/7", "value": 1},
            "error in add for path: '/spec/list/7': Unable to access invalid index: 7: invalid index referenced",
        ),
        (
            {"op": "move", "from": "/spec/nope", "path": "/spec/x"},
            "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value",
        ),
        ({"op": "jump", "path": "/spec"}, "Unexpected kind: jump"),
    ],
)
def test_json_patch_errors(op: dict[str, Any], expected: str) -> None:
    with pytest.raises(PatchError) as refused:
        json_patch({"spec": {"replicas": 2, "list": ["a"]}}, [op])
    assert refused.value.detail == expected
    assert refused.value.status["code"] == 422
    assert refused.value.status["message"] == "the server rejected our request due to an error in our request"


def test_json_patch_quirks_of_the_api_servers_library() -> None:
    # replace of a missing object key adds it, and test of a missing key passes against null.
    assert json_patch(
        {"a": 1}, [{"op": "replace", "path": "/b", "value": 2}, {"op": "test", "path": "/c", "value": None}]
    ) == {"a": 1, "b": 2}
    assert json_patch({"l": [1, 2, 3]}, [{"op": "remove", "path": "/l/-1"}]) == {"l": [1, 2]}


def test_merge_patch() -> None:
    doc = {"a": {"b": 1, "c": 2}, "l": [1], "s": "x"}
    assert merge_patch(doc, {"a": {"b": None, "d": {"e": None, "f": 1}}, "l": [2], "s": None}) == {
        "a": {"c": 2, "d": {"f": 1}},
        "l": [2],
    }
    assert doc == {"a": {"b": 1, "c": 2}, "l": [1], "s": "x"}


def test_unknown_fields_of_built_in_kinds() -> None:
    obj = deployment()
    obj["spec"]["bogus"] = 1
    pod_spec(obj)["containers"][0]["imagePullPolcy"] = "Always"
    obj["metadata"]["annotations"] = {"any": "thing"}
    assert builtin.unknown_fields(DEPLOYMENT, obj) == [
        "spec.bogus",
        "spec.template.spec.containers[0].imagePullPolcy",
    ]
    assert builtin.unknown_fields(DEPLOYMENT, deployment()) == []
    assert builtin.unknown_fields(("ray.io", "v1", "RayCluster"), obj) == []
