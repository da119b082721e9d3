"""A container's environment and command line, computed the way the kubelet computes them.

Order, as the kubelet builds it: `envFrom` sources in order (ConfigMaps and Secrets, keys with their
prefix; keys that are not valid variable names are skipped), then `env` entries in order, each
overriding what came before. A plain `value` may refer to variables defined before it as `$(NAME)`;
`valueFrom` values are taken literally. The command and args are expanded against the whole environment.
Expansion follows Kubernetes' rules exactly: `$$` is a literal `$`, `$(NAME)` of an unknown NAME stays as
written, a `$` before anything else is kept.

Values come from the pod (`fieldRef`), from the container's resources with the node's allocatable as the
default limit (`resourceFieldRef`, rounded up to the divisor as the kubelet does), and from the store
(ConfigMaps and Secrets of the pod's namespace). A reference that cannot be resolved and is not optional
raises `ContainerConfigError` with the kubelet's message; the kubelet reports it as the waiting reason
CreateContainerConfigError and retries.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesemantics import quantity
from localkube.node.errors import NodeError

_VALID_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ContainerConfigError(NodeError, ValueError):
    """A container's configuration cannot be turned into a process (kubelet: CreateContainerConfigError)."""


class MissingCommand(ContainerConfigError):
    """A container has neither command nor args; it can never start (kubelet: RunContainerError)."""


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion (see the module docstring)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            end = text.find(")", i + 2)
            if end < 0:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : end]
                out.append(variables.get(name, f"$({name})"))
                i = end + 1
        else:
            out.append("$" + following)
            i += 2
    return "".join(out)


def container_environment(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    read: Callable[[str, str, str], dict[str, Any] | None],
    allocatable: Mapping[str, str],
) -> dict[str, str]:
    """The variables a container declares, in order. `read(plural, namespace, name)` reads a ConfigMap
    or Secret from the store."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for kind, plural in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            ref = source.get(kind)
            if ref is None:
                continue
            obj = read(plural, namespace, ref.get("name", ""))
            if obj is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'{plural[:-1]} "{ref.get("name", "")}" not found')
            for key, value in _data(obj, plural).items():
                if _VALID_NAME.match(prefix + key):
                    env[prefix + key] = value
    for entry in container.get("env") or []:
        name = entry["name"]
        if "valueFrom" in entry:
            found = _value_from(entry["valueFrom"], pod, container, read, allocatable, namespace)
            if found is not None:  # None: an optional reference to something absent sets nothing
                env[name] = found
        else:
            env[name] = expand(str(entry.get("value", "")), env)
    return env


def command_line(
    container: Mapping[str, Any], env: Mapping[str, str], entrypoint: Sequence[str] = ()
) -> list[str]:
    """The argv of a container: command then args, expanded. No image is run, so an image's entrypoint is
    only what localkube was told (`entrypoint`, from `--image-entrypoint`): a container without a command
    runs it with its args, and one with neither command, args nor a known entrypoint cannot start."""
    command = container.get("command") or list(entrypoint)
    argv = [*command, *(container.get("args") or [])]
    if not argv:
        raise MissingCommand(
            f'container "{container.get("name", "")}" has neither command nor args: localkube runs containers '
            "as local processes and cannot use an image's entrypoint (give one with --image-entrypoint)"
        )
    return [expand(str(part), env) for part in argv]


def _data(obj: Mapping[str, Any], plural: str) -> dict[str, str]:
    """The string values of a ConfigMap or Secret (a Secret's data is base64)."""
    if plural == "secrets":
        decoded = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        return {**decoded, **(obj.get("stringData") or {})}
    binary = {k: base64.b64decode(v).decode() for k, v in (obj.get("binaryData") or {}).items()}
    return {**binary, **(obj.get("data") or {})}


def _value_from(
    source: Mapping[str, Any],
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    read: Callable[[str, str, str], dict[str, Any] | None],
    allocatable: Mapping[str, str],
    namespace: str,
) -> str | None:
    if "fieldRef" in source:
        return field_value(pod, source["fieldRef"].get("fieldPath", ""))
    if "resourceFieldRef" in source:
        return resource_value(pod, container, source["resourceFieldRef"], allocatable)
    for kind, plural, title in (
        ("configMapKeyRef", "configmaps", "ConfigMap"),
        ("secretKeyRef", "secrets", "Secret"),
    ):
        ref = source.get(kind)
        if ref is None:
            continue
        name, key = ref.get("name", ""), ref.get("key", "")
        obj = read(plural, namespace, name)
        if obj is None:
            if ref.get("optional"):
                return None
            raise ContainerConfigError(f'{plural[:-1]} "{name}" not found')
        data = _data(obj, plural)
        if key not in data:
            if ref.get("optional"):
                return None
            raise ContainerConfigError(f"couldn't find key {key} in {title} {namespace}/{name}")
        return data[key]
    raise ContainerConfigError(f"env valueFrom: unsupported source {sorted(source)}")


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """The downward API's value of a field path of the pod."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    simple = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(ip["ip"] for ip in status.get("podIPs") or []),
        "status.hostIPs": ",".join(ip["ip"] for ip in status.get("hostIPs") or []),
    }
    if path in simple:
        return str(simple[path] or "")
    match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if match:
        return str((metadata.get(match.group(1)) or {}).get(match.group(2), ""))
    raise ContainerConfigError(f"env valueFrom.fieldRef: unsupported fieldPath {path!r}")


def resource_value(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    ref: Mapping[str, Any],
    allocatable: Mapping[str, str],
) -> str:
    """A container's limit or request as the kubelet renders it: divided by the divisor and rounded up; a
    limit not set is the node's allocatable."""
    named = ref.get("containerName") or container.get("name")
    spec = pod.get("spec") or {}
    target = next(
        (c for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])] if c.get("name") == named),
        container,
    )  # fmt: skip
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    if kind not in ("limits", "requests") or not resource:
        raise ContainerConfigError(
            f"env valueFrom.resourceFieldRef: unsupported resource {ref.get('resource')!r}"
        )
    resources = target.get("resources") or {}
    limits = resources.get("limits") or {}
    if kind == "limits":
        amount = limits.get(resource, allocatable.get(resource, 0))
    else:
        amount = {**limits, **(resources.get("requests") or {})}.get(resource, 0)
    divisor = quantity.parse(ref.get("divisor") or "1")
    if divisor == 0:
        raise ContainerConfigError("env valueFrom.resourceFieldRef: divisor must not be 0")
    return str(math.ceil(quantity.parse(amount) / divisor))
