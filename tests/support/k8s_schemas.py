"""Strict validation against the official Kubernetes JSON schemas, with each schema read once per run.

`kubernetes_validate.validate` reads and parses the schema files (the definitions file is several MB) on every
call; the schema tests validate thousands of built objects, so they share one validator per kind here. The
schemas, the strict mode and the errors are kubernetes_validate's own."""

import functools
import json
from importlib import resources
from typing import Any

import jsonschema
from referencing import Registry, Resource

KUBERNETES_VERSION = "1.37"


def validate(obj: dict[str, Any]) -> None:
    """Raises `jsonschema.ValidationError` if `obj` does not validate in strict mode (no unknown fields)."""
    _validator(obj["kind"].lower(), _schema_api_version(obj["apiVersion"])).validate(obj)


def _schema_api_version(api_version: str) -> str:
    # kubernetes_validate's file naming: the group's first label, then the version (rbac.authorization.k8s.io/v1
    # is rbac-v1; the core group's v1 stays v1).
    group, _, version = api_version.rpartition("/")
    return f"{group.split('.')[0]}-{version}" if group else version


@functools.cache
def _validator(kind: str, api_version: str) -> jsonschema.Draft202012Validator:
    schema = _load(f"{kind}-{api_version}.json")
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(_load("_definitions.json")) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


@functools.lru_cache(maxsize=64)
def _load(name: str) -> Any:
    folder = (
        resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{KUBERNETES_VERSION}.0-local-strict"
    )
    return json.loads((folder / name).read_text(encoding="utf-8"))
