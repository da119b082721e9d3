"""Object semantics over HTTP: identity, generation, concurrency, finalizers, selectors, paging, watch."""

from __future__ import annotations

import json
import socket
import ssl

import httpx
import pytest

from conformance.support import ROOT_CA
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess


def _configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def _rayclusters(namespace: str) -> str:
    return f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters"


def _raycluster(name: str) -> dict[str, object]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    return {
        "metadata": {"name": name},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}}},
    }


def test_create_sets_identity_and_generate_name(api: httpx.Client, namespace: str) -> None:
    made = api.post(_configmaps(namespace), json={"metadata": {"generateName": "gen-"}}).json()
    assert made["metadata"]["name"].startswith("gen-") and len(made["metadata"]["name"]) == 9
    assert made["metadata"]["uid"] and made["metadata"]["creationTimestamp"].endswith("Z")
    # As kube-apiserver: a long prefix is cut to leave room for the suffix within 63 characters.
    long = api.post(_configmaps(namespace), json={"metadata": {"generateName": "a" * 70}}).json()
    assert long["metadata"]["name"][:58] == "a" * 58 and len(long["metadata"]["name"]) == 63
    again = api.post(_configmaps(namespace), json={"metadata": {"name": made["metadata"]["name"]}})
    assert again.status_code == 409 and again.json()["reason"] == "AlreadyExists"
    missing = api.post("/api/v1/namespaces/no-such-namespace/configmaps", json={"metadata": {"name": "x"}})
    assert (
        missing.status_code == 404 and missing.json()["message"] == 'namespaces "no-such-namespace" not found'
    )


def test_generation_grows_with_spec_changes_only_and_status_is_separate(
    api: httpx.Client, namespace: str
) -> None:
    created = api.post(_rayclusters(namespace), json=_raycluster("gen")).json()
    assert created["metadata"]["generation"] == 1
    url = f"{_rayclusters(namespace)}/gen"
    labelled = api.patch(
        url,
        json={"metadata": {"labels": {"a": "b"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    ).json()
    assert labelled["metadata"]["generation"] == 1
    spec_changed = api.patch(
        url, json={"spec": {"suspend": True}}, headers={"Content-Type": "application/merge-patch+json"}
    ).json()
    assert spec_changed["metadata"]["generation"] == 2
    ignored = api.patch(
        url, json={"status": {"state": "ready"}}, headers={"Content-Type": "application/merge-patch+json"}
    ).json()
    assert "status" not in ignored, "the main resource must not write status"
    status = api.patch(
        f"{url}/status",
        json={"status": {"state": "ready"}, "spec": {"suspend": False}},
        headers={"Content-Type": "application/merge-patch+json"},
    ).json()
    assert (
        status["status"]["state"] == "ready"
        and status["spec"]["suspend"] is True
        and status["metadata"]["generation"] == 2
    )
    unchanged = api.put(url, json=status).json()
    assert unchanged["metadata"]["resourceVersion"] == status["metadata"]["resourceVersion"], (
        "a no-op update writes nothing"
    )


def test_stale_update_is_a_409_conflict(api: httpx.Client, namespace: str) -> None:
    created = api.post(_configmaps(namespace), json={"metadata": {"name": "c"}}).json()
    api.put(f"{_configmaps(namespace)}/c", json={**created, "data": {"a": "1"}}).raise_for_status()
    stale = api.put(f"{_configmaps(namespace)}/c", json={**created, "data": {"a": "2"}})
    assert stale.status_code == 409
    assert (
        stale.json()["message"]
        == 'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your changes to the latest version and try again'
    )


def test_finalizers_hold_deletion_until_removed(api: httpx.Client, namespace: str) -> None:
    api.post(
        _configmaps(namespace), json={"metadata": {"name": "held", "finalizers": ["example.com/x"]}}
    ).raise_for_status()
    deleting = api.delete(f"{_configmaps(namespace)}/held")
    assert deleting.status_code == 202 and deleting.json()["metadata"]["deletionTimestamp"]
    current = api.get(f"{_configmaps(namespace)}/held").json()
    added = api.put(
        f"{_configmaps(namespace)}/held",
        json={
            **current,
            "metadata": {**current["metadata"], "finalizers": ["example.com/x", "example.com/y"]},
        },
    )
    assert added.status_code == 422 and "no new finalizers can be added" in added.text
    api.put(
        f"{_configmaps(namespace)}/held",
        json={**current, "metadata": {**current["metadata"], "finalizers": []}},
    ).raise_for_status()
    assert api.get(f"{_configmaps(namespace)}/held").status_code == 404


def test_selectors_and_paging(api: httpx.Client, namespace: str) -> None:
    for index in range(5):
        labels = {"tier": "web" if index % 2 else "db", "index": str(index)}
        api.post(
            _configmaps(namespace), json={"metadata": {"name": f"p{index}", "labels": labels}}
        ).raise_for_status()

    def names(**params: str) -> list[str]:
        items = api.get(_configmaps(namespace), params=params).json()["items"]
        return [item["metadata"]["name"] for item in items if item["metadata"]["name"] != ROOT_CA]

    assert names(labelSelector="tier=web") == ["p1", "p3"]
    assert names(labelSelector="tier!=web,index") == ["p0", "p2", "p4"]
    assert names(labelSelector="index in (0,4)") == ["p0", "p4"]
    assert names(labelSelector="index notin (0,4),tier=db") == ["p2"]
    assert names(labelSelector="!tier") == []
    assert names(fieldSelector="metadata.name=p3") == ["p3"]
    assert names(fieldSelector="metadata.name!=p3", labelSelector="tier=web") == ["p1"]
    page = api.get(_configmaps(namespace), params={"limit": "2"}).json()
    seen = [item["metadata"]["name"] for item in page["items"]]
    while page["metadata"].get("continue"):
        page = api.get(
            _configmaps(namespace), params={"limit": "2", "continue": page["metadata"]["continue"]}
        ).json()
        seen += [item["metadata"]["name"] for item in page["items"]]
    assert [name for name in seen if name != ROOT_CA] == [f"p{index}" for index in range(5)]
    assert api.get(_configmaps(namespace), params={"labelSelector": "a in (b"}).status_code == 400


def test_dry_run_stores_nothing(api: httpx.Client, namespace: str) -> None:
    dry = api.post(_configmaps(namespace), params={"dryRun": "All"}, json={"metadata": {"name": "dry"}})
    assert dry.status_code == 201 and dry.json()["metadata"]["uid"]
    assert api.get(f"{_configmaps(namespace)}/dry").status_code == 404


def test_scale_subresource_reads_and_writes_replicas(api: httpx.Client, namespace: str) -> None:
    deployment = {"metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}  # fmt: skip
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments/d"
    api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json=deployment).raise_for_status()
    scale = api.get(f"{url}/scale").json()
    assert (
        scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1 and scale["status"]["selector"] == "app=d"
    )
    api.patch(
        f"{url}/scale",
        json={"spec": {"replicas": 4}},
        headers={"Content-Type": "application/merge-patch+json"},
    ).raise_for_status()
    scaled = api.get(url).json()
    assert scaled["spec"]["replicas"] == 4 and scaled["metadata"]["generation"] == 2


def test_watch_sends_bookmarks_and_ends_at_timeout(api: httpx.Client, namespace: str) -> None:
    revision = api.get(_configmaps(namespace)).json()["metadata"]["resourceVersion"]
    api.post(_configmaps(namespace), json={"metadata": {"name": "w"}}).raise_for_status()
    params = {
        "watch": "true",
        "resourceVersion": revision,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "6",
    }
    with api.stream("GET", _configmaps(namespace), params=params) as stream:
        events = [json.loads(line) for line in stream.iter_lines() if line]
    assert [e["type"] for e in events][:1] == ["ADDED"] and events[0]["object"]["metadata"]["name"] == "w"
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(
        events[0]["object"]["metadata"]["resourceVersion"]
    )


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    ],
)
def test_content_negotiation(api: httpx.Client, accept: str) -> None:
    if "Table" in accept:
        table = api.get("/api/v1/namespaces", headers={"Accept": accept}).json()
        assert table["kind"] == "Table" and table["columnDefinitions"][0]["name"] == "Name"
        assert {row["cells"][0] for row in table["rows"]} >= {"default", "kube-system"}
    else:
        discovery = api.get("/apis", headers={"Accept": accept})
        assert (
            discovery.headers["content-type"]
            == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )
        groups = {item["metadata"]["name"] for item in discovery.json()["items"]}
        assert {"apps", "ray.io", "rbac.authorization.k8s.io"} <= groups


def test_unauthenticated_requests_get_401(localkube: LocalKubeProcess) -> None:
    with httpx.Client(base_url=localkube.url, verify=localkube.ssl_context()) as anonymous:
        assert anonymous.get("/api/v1/pods").status_code == 401
        assert anonymous.get("/version").json()["major"] == "1"


def test_unknown_fields_are_pruned_or_refused_with_strict_validation(
    api: httpx.Client, namespace: str
) -> None:
    cluster = _raycluster("unknown")
    cluster["spec"]["bogus"] = 1  # type: ignore[index]
    strict = api.post(_rayclusters(namespace), params={"fieldValidation": "Strict"}, json=cluster)
    assert strict.status_code == 400
    assert strict.json()["message"] == (
        'RayCluster in version "v1" cannot be handled as a RayCluster: strict decoding error: unknown field "spec.bogus"'
    )
    pruned = api.post(_rayclusters(namespace), json=cluster).json()
    assert "bogus" not in pruned["spec"]
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i", "imagee": "typo"}]}}
    refused = api.post(f"/api/v1/namespaces/{namespace}/pods", params={"fieldValidation": "Strict"}, json=pod)
    assert refused.status_code == 400
    assert refused.json()["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].imagee"'
    )


def test_selector_watch_follows_objects_into_and_out_of_the_selection(
    api: httpx.Client, namespace: str
) -> None:
    api.post(
        _configmaps(namespace), json={"metadata": {"name": "s", "labels": {"app": "x"}}}
    ).raise_for_status()
    revision = api.get(_configmaps(namespace)).json()["metadata"]["resourceVersion"]
    merge = {"Content-Type": "application/merge-patch+json"}
    api.patch(
        f"{_configmaps(namespace)}/s", json={"metadata": {"labels": {"app": "y"}}}, headers=merge
    ).raise_for_status()
    api.patch(
        f"{_configmaps(namespace)}/s", json={"metadata": {"labels": {"app": "x"}}}, headers=merge
    ).raise_for_status()
    api.patch(f"{_configmaps(namespace)}/s", json={"data": {"k": "v"}}, headers=merge).raise_for_status()
    params = {"watch": "true", "resourceVersion": revision, "labelSelector": "app=x", "timeoutSeconds": "1"}
    with api.stream("GET", _configmaps(namespace), params=params) as stream:
        events = [json.loads(line)["type"] for line in stream.iter_lines() if line]
    assert events == ["DELETED", "ADDED", "MODIFIED"]


def _widget_crd(schema: dict[str, object]) -> dict[str, object]:
    version = {
        "served": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {
            "status": {},
            "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
        },
        "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {**version, "name": "v1", "storage": True},
                {**version, "name": "v1beta1", "storage": False},
            ],
        },
    }


def test_a_crd_is_served_at_once_in_every_version_with_scale_and_columns(
    api: httpx.Client, namespace: str
) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    not_structural = api.post(
        crds,
        json=_widget_crd(
            {"type": "object", "properties": {"spec": {"properties": {"replicas": {"type": "integer"}}}}}
        ),
    )
    assert (
        not_structural.status_code == 422
        and "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value"
        in not_structural.text
    )
    spec = {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 0}}}
    schema = {
        "type": "object",
        "properties": {
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    api.post(crds, json=_widget_crd(schema)).raise_for_status()
    try:
        widgets = f"/apis/example.com/v1/namespaces/{namespace}/widgets"
        api.post(widgets, json={"metadata": {"name": "w"}, "spec": {"replicas": 1}}).raise_for_status()
        assert (
            api.get(f"/apis/example.com/v1beta1/namespaces/{namespace}/widgets/w").json()["apiVersion"]
            == "example.com/v1beta1"
        )
        api.put(f"{widgets}/w/scale", json={"spec": {"replicas": 5}}).raise_for_status()
        assert api.get(f"{widgets}/w").json()["spec"]["replicas"] == 5
        table = api.get(widgets, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Replicas"] and table["rows"][0][
            "cells"
        ] == ["w", 5]
    finally:
        api.delete(f"{crds}/widgets.example.com")
    assert api.get(f"/apis/example.com/v1/namespaces/{namespace}/widgets").status_code == 404


def test_a_namespace_terminates_until_its_last_finalized_object_goes(api: httpx.Client) -> None:
    api.post("/api/v1/namespaces", json={"metadata": {"name": "terminating"}}).raise_for_status()
    api.post(_configmaps("terminating"), json={"metadata": {"name": "free"}}).raise_for_status()
    api.post(
        _configmaps("terminating"), json={"metadata": {"name": "held", "finalizers": ["example.com/x"]}}
    ).raise_for_status()
    deleting = api.delete("/api/v1/namespaces/terminating")
    assert deleting.status_code == 202 and deleting.json()["status"]["phase"] == "Terminating"
    assert [item["metadata"]["name"] for item in api.get(_configmaps("terminating")).json()["items"]] == [
        "held"
    ]
    refused = api.post(_configmaps("terminating"), json={"metadata": {"name": "late"}})
    assert refused.status_code == 403 and "because it is being terminated" in refused.json()["message"]
    merge = {"Content-Type": "application/merge-patch+json"}
    api.patch(
        f"{_configmaps('terminating')}/held", json={"metadata": {"finalizers": None}}, headers=merge
    ).raise_for_status()
    assert api.get("/api/v1/namespaces/terminating").status_code == 404


def test_a_namespace_goes_once_the_kubelet_removes_its_last_pod(api: httpx.Client) -> None:
    # Found by benchmarks.scale: a pod deleted with a grace period is removed by the (simulated) kubelet,
    # not by the REST delete, and the namespace stayed Terminating after it.
    api.post("/api/v1/namespaces", json={"metadata": {"name": "pods-terminating"}}).raise_for_status()
    pods = "/api/v1/namespaces/pods-terminating/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    api.post(pods, json=pod).raise_for_status()
    eventually(lambda: api.get(f"{pods}/p").json()["spec"].get("nodeName"), 30, "the pod bound")
    assert api.delete("/api/v1/namespaces/pods-terminating").status_code == 202
    eventually(
        lambda: api.get("/api/v1/namespaces/pods-terminating").status_code == 404, 30, "the namespace gone"
    )
    assert api.get(pods).json()["items"] == []
    assert api.get("/api/v1/namespaces/pods-terminating").status_code == 404


def test_secret_string_data_is_folded_into_data(api: httpx.Client, namespace: str) -> None:
    secrets = f"/api/v1/namespaces/{namespace}/secrets"
    created = api.post(secrets, json={"metadata": {"name": "s"}, "stringData": {"user": "ray"}}).json()
    assert created["data"] == {"user": "cmF5"} and "stringData" not in created
    merge = {"Content-Type": "application/merge-patch+json"}
    patched = api.patch(f"{secrets}/s", json={"stringData": {"password": "pw"}}, headers=merge).json()
    assert patched["data"] == {"user": "cmF5", "password": "cHc="}


def test_events_are_one_collection_in_both_apis(api: httpx.Client, namespace: str) -> None:
    about = {"kind": "Pod", "name": "p", "namespace": namespace}
    new_style = {"metadata": {"name": "e1"}, "regarding": about, "note": "pulled", "reason": "Pulled", "type": "Normal", "action": "Pull", "reportingController": "kubelet", "reportingInstance": "node-1", "eventTime": "2026-01-01T00:00:00.000000Z"}  # fmt: skip
    api.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=new_style).raise_for_status()
    core = api.get(f"/api/v1/namespaces/{namespace}/events/e1").json()
    assert core["apiVersion"] == "v1" and core["involvedObject"] == about and core["message"] == "pulled"
    api.post(
        f"/api/v1/namespaces/{namespace}/events",
        json={"metadata": {"name": "e2"}, "involvedObject": about, "message": "started", "count": 2},
    ).raise_for_status()
    merge = {"Content-Type": "application/merge-patch+json"}
    api.patch(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/e2", json={"note": "restarted"}, headers=merge
    ).raise_for_status()
    # A typed list's items carry no apiVersion; the list and the renamed fields show the API's form.
    listed = api.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events").json()
    assert listed["apiVersion"] == "events.k8s.io/v1"
    assert [(e["note"], e.get("deprecatedCount")) for e in listed["items"]] == [
        ("pulled", None),
        ("restarted", 2),
    ]
    # Field selectors name the API's own fields: `regarding` in one, `involvedObject` in the other.
    by_regarding = api.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                           params={"fieldSelector": "regarding.name=p"}).json()["items"]  # fmt: skip
    assert len(by_regarding) == 2
    assert not api.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                       params={"fieldSelector": "regarding.name=other"}).json()["items"]  # fmt: skip
    by_involved = api.get(
        f"/api/v1/namespaces/{namespace}/events", params={"fieldSelector": "involvedObject.name=p"}
    )
    assert len(by_involved.json()["items"]) == 2


def _wait_for_log_line(localkube: LocalKubeProcess, text: str, timeout: float = 30) -> None:
    log_path = localkube.data_dir / "localkube.log"
    eventually(lambda: text in log_path.read_text(errors="replace"), timeout, f"{text!r} in {log_path}")


def _tls(localkube: LocalKubeProcess, host: str, port: int) -> ssl.SSLSocket:
    return localkube.ssl_context().wrap_socket(
        socket.create_connection((host, port), timeout=30), server_hostname=host
    )


def test_a_request_whose_client_goes_before_its_body_is_whole_is_not_carried_out(
    localkube: LocalKubeProcess, api: httpx.Client, namespace: str
) -> None:
    # A client that lost its leader lease stops between a DELETE's headers and its options (the operator's
    # write fence); kube-apiserver fails to read such a body and does nothing.
    api.post(_configmaps(namespace), json={"metadata": {"name": "kept"}}).raise_for_status()
    options = b'{"propagationPolicy":"Background"}'
    host, port = localkube.url.removeprefix("https://").rsplit(":", 1)
    head = (
        f"DELETE {_configmaps(namespace)}/kept HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {localkube.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(options)}\r\n\r\n"
    )
    with _tls(localkube, host, int(port)) as tls:
        tls.sendall(head.encode())  # the headers alone: the body never comes
    _wait_for_log_line(localkube, f"dropped DELETE {_configmaps(namespace)}/kept")
    assert api.get(f"{_configmaps(namespace)}/kept").status_code == 200
    # The whole request, sent the same way, is carried out.
    with _tls(localkube, host, int(port)) as tls:
        tls.sendall(head.encode() + options)
        assert tls.recv(64).startswith(b"HTTP/1.1 200")
    assert api.get(f"{_configmaps(namespace)}/kept").status_code == 404
