"""Where localkube once answered otherwise than kube-apiserver: each test holds one behaviour the
differential tier (tests/differential) found and compared against the real server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

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
