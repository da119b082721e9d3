"""Edits of Kubernetes container and pod-spec dicts, with upstream's "exists" semantics.

The builders work on plain JSON-shaped dicts (a deep copy of the user's template, never the user's own).
Existence checks are by name only and look at the first match, as upstream's `EnvVarExists`,
`VolumeExists` and `VolumeMountExists` do; appends never deduplicate unless a function says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JSON = dict[str, Any]


def shell_command(login_shell: bool, *, exit_on_error: bool = False) -> list[str]:
    """`utils.GetContainerCommand`: the shell that runs a generated command line (``-cl`` when the
    operator runs with ENABLE_LOGIN_SHELL=true; ``-e`` too for the submitter, which stops at the first
    failing command)."""
    options = "-c" + ("e" if exit_on_error else "") + ("l" if login_shell else "")
    return ["/bin/bash", options, "--"]


def env_exists(container: Mapping[str, Any], name: str) -> bool:
    return any(env.get("name") == name for env in container.get("env") or ())


def append_env(container: JSON, *env: Mapping[str, Any]) -> None:
    container.setdefault("env", []).extend(dict(item) for item in env)


def add_env_if_absent(container: JSON, name: str, value: str) -> None:
    if not env_exists(container, name):
        append_env(container, {"name": name, "value": value})


def value_env(name: str, value: str) -> JSON:
    """An env var with a literal value; an empty value is omitted, as Go's `omitempty` writes it."""
    return {"name": name, "value": value} if value else {"name": name}


def field_env(name: str, field_path: str) -> JSON:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def mount_exists(container: Mapping[str, Any], name: str) -> bool:
    return any(mount.get("name") == name for mount in container.get("volumeMounts") or ())


def mounted_at(container: Mapping[str, Any], path: str) -> bool:
    return any(mount.get("mountPath") == path for mount in container.get("volumeMounts") or ())


def append_mount(container: JSON, mount: Mapping[str, Any]) -> None:
    container.setdefault("volumeMounts", []).append(dict(mount))


def volume_exists(pod_spec: Mapping[str, Any], name: str) -> bool:
    return any(volume.get("name") == name for volume in pod_spec.get("volumes") or ())


def append_volume(pod_spec: JSON, volume: Mapping[str, Any]) -> None:
    pod_spec.setdefault("volumes", []).append(dict(volume))


def image_of(source: Mapping[str, Any], name: str) -> JSON:
    """A new container called `name` running the image (and pull policy) of `source`."""
    result: JSON = {"name": name}
    for key in ("image", "imagePullPolicy"):
        if source.get(key):
            result[key] = source[key]
    return result


def fixed_resources(cpu: str, memory: str) -> JSON:
    """Resource requirements whose limits equal their requests (the operator's own small containers)."""
    return {"limits": {"cpu": cpu, "memory": memory}, "requests": {"cpu": cpu, "memory": memory}}


def has_port_named(container: Mapping[str, Any], name: str) -> bool:
    return any(port.get("name") == name for port in container.get("ports") or ())


def port_named(container: Mapping[str, Any], name: str, default: int) -> int:
    """`utils.FindContainerPort`: the containerPort of the first port called `name`, else `default`."""
    for port in container.get("ports") or ():
        if port.get("name") == name:
            return int(port.get("containerPort", 0))
    return default
