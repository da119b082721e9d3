"""What the install artifacts' tests share: a schema check of rendered objects, look-ups by kind and name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import kubernetes_validate
import pytest
import yaml

from kuberay.api import manifest
from kuberay.api.features import FeatureGates

KUBERNETES_VERSION = "1.32"  # the kubectl the tests use, and the oldest release these manifests target
# Kinds that no Kubernetes schema describes: the Prometheus Operator's, OpenShift's and cert-manager's.
FOREIGN_GROUPS = ("monitoring.coreos.com/", "route.openshift.io/", "cert-manager.io/")
# The CRDs are generated and checked by their own tests; validating 4 MB of schema here would only add time.
SKIPPED_KINDS = ("CustomResourceDefinition",)


def validate_all(objects: Iterable[dict[str, Any]]) -> None:
    """Every object against the official schema of its kind (strict: no unknown fields); ray.io objects
    against our CRDs and the operator's validation, as `kuberay validate` does."""
    for obj in objects:
        if obj["kind"] in SKIPPED_KINDS:
            continue
        api_version = str(obj.get("apiVersion", ""))
        if api_version.startswith("ray.io/"):
            errors = manifest.check_object(obj, FeatureGates.parse(""))
            assert not errors, f"{manifest.display_name(obj)}: {[str(e) for e in errors]}"
        elif not api_version.startswith(FOREIGN_GROUPS):
            try:
                kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as error:
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {error.message} at {list(error.path)}")


def find(objects: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(matches) == 1, f"{len(matches)} {kind} named {name}: {[o['metadata'] for o in matches]}"
    return matches[0]


def load_all(text: str) -> list[dict[str, Any]]:
    """The documents of a YAML stream, parsed with libyaml (the CRDs make rendered output megabytes long)."""
    return [doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc]


def kinds(objects: Iterable[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objects}
