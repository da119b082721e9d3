"""Subresources that are views of an object rather than the object: scale, log, binding, token, finalize.

- `<res>/scale` reads and writes an `autoscaling/v1` Scale mapped onto the object's replica fields
  (the CRD's scale paths, or `.spec.replicas` for built-ins); writes go through the normal update, so
  they bump generation and honour resourceVersion preconditions.
- `pods/log` answers text/plain from the `pod_logs` source (the node agent's), empty until one exists;
  a source may return an async iterator of chunks, which is streamed (`kubectl logs -f`).
- `pods/binding` assigns a node once (409 if the pod is already bound) and marks the pod scheduled.
- `serviceaccounts/token` issues a signed token for the ServiceAccount (a TokenRequest).
- `namespaces/finalize` replaces a namespace's `spec.finalizers`.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from localkube.server import bodies, errors, patching
from localkube.server.auth import Authenticator
from localkube.server.rest import Query, Resources, clone, now
from localkube.server.selectors import selector_text
from localkube.server.tables import jsonpath_values

if TYPE_CHECKING:
    from localkube.server.app import Target

# (namespace, pod, container, query) -> the log text, or its chunks as they come (`follow=true`).
LogText = str | AsyncIterator[bytes]
PodLogs = Callable[[str, str, str, Query], LogText]


def handle(
    resources: Resources,
    authenticator: Authenticator,
    pod_logs: PodLogs | None,
    method: str,
    target: Target,
    body: bytes,
    content_type: str,
    query: Query,
) -> tuple[int, dict[str, Any] | LogText]:
    assert target.name is not None and target.subresource is not None
    if target.subresource == "scale":
        return _scale(resources, method, target, body, content_type, query)
    if target.subresource == "log" and method == "GET":
        return 200, _log(resources, pod_logs, target, query)
    if target.subresource == "binding" and method == "POST":
        return _bind(resources, target, bodies.decode(body, content_type))
    if target.subresource == "token" and method == "POST":
        return _token(resources, authenticator, target, bodies.decode(body, content_type))
    if target.subresource == "finalize" and method == "PUT":
        namespace = resources.get(target.resource_type, None, target.name)
        namespace.setdefault("spec", {})["finalizers"] = (
            bodies.decode(body, content_type).get("spec") or {}
        ).get("finalizers") or []
        return 200, resources.update(target.resource_type, None, target.name, namespace, None, query)
    raise errors.method_not_allowed()


def _path_parts(json_path: str) -> list[str]:
    return [part for part in json_path.strip().lstrip(".").split(".") if part]


def _set_path(obj: dict[str, Any], json_path: str, value: Any) -> None:
    parts = _path_parts(json_path)
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


def _scale_of(resources: Resources, target: Target) -> tuple[dict[str, Any], dict[str, Any]]:
    resource_type = target.resource_type
    assert resource_type.scale is not None and target.name is not None
    obj = resources.get(resource_type, target.namespace, target.name)
    paths = resource_type.scale
    spec_replicas = jsonpath_values(obj, paths.spec_replicas)
    status_replicas = jsonpath_values(obj, paths.status_replicas)
    status: dict[str, Any] = {"replicas": status_replicas[0] if status_replicas else 0}
    if paths.label_selector:
        selector = jsonpath_values(obj, paths.label_selector)
        if selector:
            status["selector"] = selector[0] if isinstance(selector[0], str) else selector_text(selector[0])
    metadata = obj["metadata"]
    scale = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: metadata[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in metadata
        },
        "spec": {"replicas": spec_replicas[0] if spec_replicas else 0},
        "status": status,
    }
    return obj, scale


def _scale(
    resources: Resources, method: str, target: Target, body: bytes, content_type: str, query: Query
) -> tuple[int, dict[str, Any]]:
    obj, scale = _scale_of(resources, target)
    if method == "GET":
        return 200, scale
    if method == "PUT":
        wanted = bodies.decode(body, content_type)
    elif method == "PATCH":
        content_type = content_type.split(";")[0].strip()
        # A Scale has no lists, so a strategic merge is a plain merge.
        if content_type == patching.STRATEGIC_MERGE_PATCH:
            content_type = patching.MERGE_PATCH
        wanted = patching.patch(scale, body, content_type, None)
    else:
        raise errors.method_not_allowed()
    replicas = (wanted.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        raise errors.ApiError(
            422,
            "Invalid",
            f'Scale.autoscaling "{target.name}" is invalid: spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0',
        )
    assert target.resource_type.scale is not None and target.name is not None
    updated = clone(obj)
    _set_path(updated, target.resource_type.scale.spec_replicas, replicas)
    requested = (wanted.get("metadata") or {}).get("resourceVersion")
    if requested:
        updated["metadata"]["resourceVersion"] = requested
    resources.update(target.resource_type, target.namespace, target.name, updated, None, query)
    return 200, _scale_of(resources, target)[1]


def _log(resources: Resources, pod_logs: PodLogs | None, target: Target, query: Query) -> LogText:
    assert target.name is not None and target.namespace is not None
    pod = resources.get(target.resource_type, target.namespace, target.name)
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    container = query.get("container")
    if container is None:
        if len(names) != 1:
            raise errors.bad_request(
                f"a container name must be specified for pod {target.name}, choose one of: [{' '.join(names)}]"
            )
        container = names[0]
    init_names = [c.get("name", "") for c in (pod.get("spec") or {}).get("initContainers") or []]
    if container not in names and container not in init_names:
        raise errors.bad_request(f"container {container} is not valid for pod {target.name}")
    return pod_logs(target.namespace, target.name, container, query) if pod_logs else ""


def _bind(resources: Resources, target: Target, binding: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    assert target.name is not None
    node = (binding.get("target") or {}).get("name")
    if not node:
        raise errors.ApiError(
            422, "Invalid", f'Binding "{target.name}" is invalid: target.name: Required value'
        )
    pod = resources.get(target.resource_type, target.namespace, target.name)
    bound = (pod.get("spec") or {}).get("nodeName")
    if bound:
        raise errors.conflict(
            "pods/binding", "", target.name, f'pod {target.name} is already assigned to node "{bound}"'
        )
    pod.setdefault("spec", {})["nodeName"] = node
    conditions = [
        c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"
    ]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()}
    )
    pod.setdefault("status", {})["conditions"] = conditions
    resources.store.update(
        target.resource_type.key(target.namespace, target.name), pod, int(pod["metadata"]["resourceVersion"])
    )
    return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _token(
    resources: Resources, authenticator: Authenticator, target: Target, request: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    assert target.name is not None and target.namespace is not None
    account = resources.get(target.resource_type, target.namespace, target.name)
    spec = request.get("spec") or {}
    seconds = int(spec.get("expirationSeconds") or 3600)
    token, expiry = authenticator.issue_service_account_token(
        target.namespace, target.name, account["metadata"]["uid"], seconds, list(spec.get("audiences") or [])
    )
    expires = datetime.datetime.fromtimestamp(expiry, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return 201, {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": target.name, "namespace": target.namespace, "creationTimestamp": None},
        "spec": {**spec, "expirationSeconds": seconds},
        "status": {"token": token, "expirationTimestamp": expires},
    }
