"""What the apiextensions server refuses when a CustomResourceDefinition is written."""

from __future__ import annotations

from localkube.server import crds


def test_an_unknown_scope_lists_the_supported_ones() -> None:
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object"}},
    }
    spec = {"group": "e.io", "names": {"plural": "xs", "kind": "X"}, "scope": "Global", "versions": [version]}
    assert [str(cause) for cause in crds.validate({"metadata": {"name": "xs.e.io"}, "spec": spec})] == [
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'
    ]
