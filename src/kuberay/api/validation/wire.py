"""Reading ray.io objects in their JSON form, the way upstream's Go code reads its structs.

Validation rules are stated over wire fields: a Go pointer that is nil is a key that is absent, a Go zero
value is a key that is absent or null. Reading the JSON form (the model's `dump()`, which writes only what
was set) keeps that distinction exactly, whatever defaults the Python models give their attributes, and the
names read are the names reported in error paths.

Every accessor tolerates a missing key, a null and a value of the wrong JSON type by returning the zero
value; the CRD schema check, not these rules, reports wrong types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JSON = Mapping[str, Any]

_EMPTY: JSON = {}


def obj(parent: JSON, key: str) -> JSON:
    """The object under `key`, or an empty one."""
    value = parent.get(key)
    return value if isinstance(value, Mapping) else _EMPTY


def has(parent: JSON, key: str) -> bool:
    """Whether `key` is set (present and not null): Go's `!= nil` for a pointer field."""
    return parent.get(key) is not None


def objs(parent: JSON, key: str) -> list[JSON]:
    """The list of objects under `key` (non-object items read as empty objects)."""
    value = parent.get(key)
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, Mapping) else _EMPTY for item in value]


def text(parent: JSON, key: str) -> str:
    """The string under `key`, or ``""``."""
    value = parent.get(key)
    return value if isinstance(value, str) else ""


def integer(parent: JSON, key: str) -> int | None:
    """The integer under `key`, or None when unset (booleans are not integers)."""
    value = parent.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def flag(parent: JSON, key: str) -> bool:
    """The boolean under `key`; unset is false."""
    return parent.get(key) is True


def strings(parent: JSON, key: str) -> dict[str, str]:
    """The ``map[string]string`` under `key` (non-string values read as ``""``)."""
    value = parent.get(key)
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v if isinstance(v, str) else "" for k, v in value.items()}


def env_index(container: JSON, name: str) -> int | None:
    """Index of the first env entry called `name` (upstream's `EnvVarExists`/`EnvVarByName`)."""
    for i, entry in enumerate(objs(container, "env")):
        if text(entry, "name") == name:
            return i
    return None


def pod_groups(spec: JSON, at: str) -> list[tuple[str, str | None, JSON]]:
    """The head group and the worker groups of a cluster spec: each one's path, its `groupName` (None for the
    head) and the group itself."""
    head: list[tuple[str, str | None, JSON]] = [(f"{at}.headGroupSpec", None, obj(spec, "headGroupSpec"))]
    return head + [
        (f"{at}.workerGroupSpecs[{i}]", text(group, "groupName"), group)
        for i, group in enumerate(objs(spec, "workerGroupSpecs"))
    ]


def template_containers(group: JSON) -> list[JSON]:
    """The containers of a group's pod template."""
    return objs(obj(obj(group, "template"), "spec"), "containers")
