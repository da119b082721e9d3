"""Where localkube once answered otherwise than kube-apiserver: each test holds one behaviour the
differential tier (tests/differential) found and compared against the real server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.eventually import eventually

_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_APPLY = {"Content-Type": "application/apply-patch+yaml"}


@pytest.fixture(scope="module")
def gizmos(api: httpx.Client) -> Iterator[str]:
    """A CRD whose spec has defaults and a scale subresource on spec.replicas; its path in a namespace."""
    spec = {
        "type": "object",
        "properties": {
            "size": {"type": "string"},
            "color": {"type": "string"},
            "replicas": {"type": "integer", "default": 1},
            "settings": {
                "type": "object",
                "default": {"level": 1},
                "properties": {"level": {"type": "integer"}},
            },
        },
    }
    status = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
    schema = {"type": "object", "properties": {"spec": spec, "status": status}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.parity.example.com"},
        "spec": {
            "group": "parity.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                }
            ],
        },
    }
    api.post(_CRDS, json=crd).raise_for_status()
    yield "/apis/parity.example.com/v1/namespaces/{ns}/gizmos"
    api.delete(f"{_CRDS}/gizmos.parity.example.com")


def _gizmo(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "parity.example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}


def _owned(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    return next(e["fieldsV1"] for e in obj["metadata"]["managedFields"] if e["manager"] == manager)


def test_a_forced_apply_after_a_scale_keeps_the_replicas_the_scale_writer_owns(
    api: httpx.Client, namespace: str, gizmos: str
) -> None:
    url = gizmos.format(ns=namespace)
    api.post(url, json=_gizmo("g", size="small")).raise_for_status()
    api.put(f"{url}/g/scale", json={"metadata": {"name": "g"}, "spec": {"replicas": 4}}).raise_for_status()
    alpha = api.patch(
        f"{url}/g?fieldManager=alpha", json=_gizmo("g", size="small", color="red"), headers=_APPLY
    )
    assert alpha.status_code == 200, alpha.text
    # What an applier owns is what it applied: the schema's defaults stay nobody's.
    assert _owned(alpha.json(), "alpha") == {"f:spec": {"f:color": {}, "f:size": {}}}
    conflict = api.patch(
        f"{url}/g?fieldManager=beta", json=_gizmo("g", size="large", color="blue"), headers=_APPLY
    )
    assert conflict.status_code == 409
    # The creator shares spec.size with alpha, which applied the value it had.
    assert [(c["message"], c["field"]) for c in conflict.json()["details"]["causes"]] == [
        ('conflict with "alpha"', ".spec.color"),
        ('conflict with "alpha"', ".spec.size"),
        ('conflict with "python-httpx" using parity.example.com/v1', ".spec.size"),
    ]
    forced = api.patch(
        f"{url}/g?fieldManager=beta&force=true", json=_gizmo("g", size="large"), headers=_APPLY
    )
    assert forced.status_code == 200, forced.text
    assert forced.json()["spec"] == {"size": "large", "color": "red", "replicas": 4, "settings": {"level": 1}}
    assert api.get(f"{url}/g").json()["spec"]["replicas"] == 4


def test_an_update_owns_the_maps_it_creates(api: httpx.Client, namespace: str) -> None:
    created = api.post(
        f"/api/v1/namespaces/{namespace}/configmaps?fieldManager=maker",
        json={"metadata": {"name": "m", "labels": {"a": "1"}}, "data": {"k": "v"}},
    ).json()
    # The maps are the creator's, and their keys: FieldsV1's "." marks the map itself.
    assert _owned(created, "maker") == {
        "f:data": {".": {}, "f:k": {}},
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
    }


def _warnings(reply: httpx.Response) -> list[str]:
    return reply.headers.get_list("warning")


@pytest.mark.parametrize("validation", ["", "Warn", "Ignore"])
def test_unknown_fields_of_a_built_in_kind_are_dropped(
    api: httpx.Client, namespace: str, validation: str
) -> None:
    query = f"?fieldValidation={validation}" if validation else ""
    body = {"metadata": {"name": f"u{validation.lower()}"}, "data": {"k": "v"}, "bogus": 1}
    created = api.post(f"/api/v1/namespaces/{namespace}/configmaps{query}", json=body)
    assert created.status_code == 201 and "bogus" not in created.json()
    expected = [] if validation == "Ignore" else ['299 - "unknown field \\"bogus\\""']
    assert _warnings(created) == expected


def test_duplicate_keys_are_refused_under_strict_and_warned_of_otherwise(
    api: httpx.Client, namespace: str
) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    body = b'{"metadata": {"name": "d", "name": "d"}, "data": {"k": "1", "k": "2"}}'
    json_type = {"Content-Type": "application/json"}
    strict = api.post(f"{url}?fieldValidation=Strict", content=body, headers=json_type)
    assert strict.status_code == 400
    assert strict.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "metadata.name", duplicate field "data.k"'
    )
    warned = api.post(url, content=body, headers=json_type)
    assert warned.status_code == 201 and warned.json()["data"] == {"k": "2"}
    assert _warnings(warned) == [
        '299 - "duplicate field \\"metadata.name\\""',
        '299 - "duplicate field \\"data.k\\""',
    ]


def test_empty_maps_and_lists_are_left_out_as_go_leaves_them(api: httpx.Client, namespace: str) -> None:
    body = {"metadata": {"name": "e", "labels": {}, "finalizers": []}, "data": {}}
    created = api.post(f"/api/v1/namespaces/{namespace}/configmaps?fieldManager=maker", json=body).json()
    assert "labels" not in created["metadata"] and "finalizers" not in created["metadata"]
    assert "data" not in created
    # Nothing was set, so the creator owns nothing and has no entry.
    assert "managedFields" not in created["metadata"]


def test_an_apply_with_undeclared_fields_cannot_be_typed_under_strict(
    api: httpx.Client, namespace: str, gizmos: str
) -> None:
    url = gizmos.format(ns=namespace)
    refused = api.patch(
        f"{url}/s?fieldManager=a&fieldValidation=Strict",
        json=_gizmo("s", size="small", bogus=1),
        headers=_APPLY,
    )
    assert refused.status_code == 500
    assert refused.json()["message"] == (
        "failed to create typed patch object (/s; parity.example.com/v1, Kind=Gizmo): "
        ".spec.bogus: field not declared in schema"
    )


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            "labelSelector=bad%20%3D%3D%3D",
            400,
            "unable to parse requirement: found '=', expected: identifier",
        ),
        (
            "fieldSelector=spec.bogus%3Dx",
            400,
            '"spec.bogus" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        (
            "resourceVersionMatch=NotOlderThan",
            422,
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            422,
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
        (
            "resourceVersion=abc",
            400,
            'invalid resource version: resourceVersion: Invalid value: "abc": '
            'strconv.ParseUint: parsing "abc": invalid syntax',
        ),
    ],
)
def test_list_options_the_real_server_refuses(
    api: httpx.Client, namespace: str, query: str, code: int, message: str
) -> None:
    refused = api.get(f"/api/v1/namespaces/{namespace}/configmaps?{query}")
    assert (refused.status_code, refused.json()["message"]) == (code, message)


def test_each_kind_selects_on_its_own_fields(api: httpx.Client, namespace: str) -> None:
    assert api.get(f"/api/v1/namespaces/{namespace}/secrets?fieldSelector=type%3Dopaque").status_code == 200
    refused = api.get(f"/api/v1/namespaces/{namespace}/secrets?fieldSelector=data.x%3Dy")
    assert (refused.status_code, refused.json()["message"]) == (400, "field label not supported: data.x")


def test_a_delete_answers_a_status_unless_the_kind_returns_the_object(
    api: httpx.Client, namespace: str
) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    uid = api.post(configmaps, json={"metadata": {"name": "gone"}}).json()["metadata"]["uid"]
    assert api.delete(f"{configmaps}/gone").json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": "gone", "kind": "configmaps", "uid": uid},
    }  # fmt: skip
    accounts = f"/api/v1/namespaces/{namespace}/serviceaccounts"
    api.post(accounts, json={"metadata": {"name": "kept"}}).raise_for_status()
    assert api.delete(f"{accounts}/kept").json()["kind"] == "ServiceAccount"


def test_a_failed_uid_precondition_names_the_kind(api: httpx.Client, namespace: str) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    uid = api.post(configmaps, json={"metadata": {"name": "p"}}).json()["metadata"]["uid"]
    refused = api.request("DELETE", f"{configmaps}/p", json={"preconditions": {"uid": "other"}})
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "p": the UID in the precondition (other) does not match '
        f"the UID in record ({uid}). The object might have been deleted and then recreated"
    )


def test_a_built_in_list_leaves_its_items_untyped_and_generation_to_the_kinds_that_track_it(
    api: httpx.Client, namespace: str
) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(configmaps, json={"metadata": {"name": "one"}}).raise_for_status()
    listed = api.get(configmaps).json()
    assert (listed["kind"], listed["apiVersion"]) == ("ConfigMapList", "v1")
    assert listed["items"] and not any("apiVersion" in i or "kind" in i for i in listed["items"])
    service = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    created = api.post(f"/api/v1/namespaces/{namespace}/services", json=service).json()
    assert "generation" not in created["metadata"]


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        ({"containers": []}, "spec.containers: Required value"),
        ({"containers": [{"name": "c"}]}, "spec.containers[0].image: Required value"),
        (
            {"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]},
            'spec.containers[1].name: Duplicate value: "c"',
        ),
        (
            {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 70000}]}]},
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}},
                    }
                ]
            },
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
        ),
        (
            {"restartPolicy": "Sometimes"},
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        ),
    ],
)
def test_a_pod_is_validated_as_the_real_server_validates_it(
    api: httpx.Client, namespace: str, spec: dict[str, Any], cause: str
) -> None:
    refused = api.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod("p", **spec))
    assert (refused.status_code, refused.json()["message"]) == (422, f'Pod "p" is invalid: {cause}')


def test_what_the_registry_sets_on_create_is_nobodys(api: httpx.Client, namespace: str) -> None:
    service = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    created = api.post(f"/api/v1/namespaces/{namespace}/services?fieldManager=maker", json=service).json()
    owned = _owned(created, "maker")
    # The decoder's defaults are the creator's; the allocated address and families, and status, are not.
    assert "f:type" in owned["f:spec"] and "f:sessionAffinity" in owned["f:spec"]
    assert not {"f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"} & set(owned["f:spec"])
    assert "f:status" not in owned and created["spec"]["clusterIP"]
    pod = api.post(f"/api/v1/namespaces/{namespace}/pods?fieldManager=maker", json=_pod("p")).json()
    assert "f:status" not in _owned(pod, "maker") and pod["status"]["phase"] == "Pending"


def test_every_namespace_gets_the_root_ca_and_keeps_it(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt"
    published = _answered(lambda: api.get(url))
    assert published.json()["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    api.delete(url).raise_for_status()
    assert _answered(lambda: api.get(url)).json()["data"] == published.json()["data"]


def _answered(get: Any) -> httpx.Response:
    """The first 200 answer of `get` within 10 s (the publisher works in the background)."""
    reply: httpx.Response = eventually(
        lambda: (answer := get()).status_code == 200 and answer, 10, "a 200 answer"
    )
    return reply
