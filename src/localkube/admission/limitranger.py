"""LimitRange defaults for a new pod's containers, as kube-apiserver's LimitRanger admission applies them.

Each LimitRange of the namespace in turn: its `Container` items' `defaultRequest` become the requests and
their `default` the limits of every container (and init container) that does not name that resource
already, and the pod is annotated with what was set (`kubernetes.io/limit-ranger`). A container that gives
only a limit has that limit as its request (the decoder's default), so no default request replaces it.
Pure functions over JSON-shaped objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

ANNOTATION = "kubernetes.io/limit-ranger"


def _defaults(limit_range: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for item in (limit_range.get("spec") or {}).get("limits") or []:
        if isinstance(item, dict) and item.get("type") == "Container":
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    return requests, limits


def _merge(
    container: dict[str, Any], requests: Mapping[str, Any], limits: Mapping[str, Any], label: str
) -> list[str]:
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = container["resources"] = {}
    own_limits = dict(resources.get("limits") or {})
    own_requests = dict(resources.get("requests") or {})
    set_limits = sorted(name for name in limits if name not in own_limits)
    set_requests = sorted(name for name in requests if name not in own_requests and name not in own_limits)
    own_limits.update({name: limits[name] for name in set_limits})
    own_requests.update({name: requests[name] for name in set_requests})
    if own_limits:
        resources["limits"] = own_limits
    if own_requests:
        resources["requests"] = own_requests
    name = container.get("name", "")
    notes = []
    if set_requests:
        notes.append(f"{', '.join(set_requests)} request for {label} {name}")
    if set_limits:
        notes.append(f"{', '.join(set_limits)} limit for {label} {name}")
    return notes


def apply_defaults(pod: dict[str, Any], limit_ranges: Iterable[Mapping[str, Any]]) -> None:
    """Fills a new pod's container resources from the namespace's LimitRanges, in place."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for limit_range in limit_ranges:
        requests, limits = _defaults(limit_range)
        if not requests and not limits:
            continue
        notes: list[str] = []
        for key, label in (("containers", "container"), ("initContainers", "init container")):
            for container in spec.get(key) or []:
                if isinstance(container, dict):
                    notes += _merge(container, requests, limits, label)
        if notes:
            metadata = pod.setdefault("metadata", {})
            annotations = metadata.get("annotations")
            if not isinstance(annotations, dict):
                annotations = metadata["annotations"] = {}
            annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
