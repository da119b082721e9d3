"""Subresources that are views of an object rather than the object: scale, log, token, finalize (pods/binding,
admitted as a create, is binding.py).

- `<res>/scale` reads and writes an `autoscaling/v1` Scale mapped onto the object's replica fields
  (the CRD's scale paths, or `.spec.replicas` for built-ins); writes go through the normal update, so
  they bump generation and honour resourceVersion preconditions.
- `pods/log` answers text/plain from the `pod_logs` source (the node agent's), empty until one exists;
  a source may return an async iterator of chunks, which is streamed (`kubectl logs -f`).
- `serviceaccounts/token` issues a signed token for the ServiceAccount (a TokenRequest).
- `namespaces/finalize` replaces a namespace's `spec.finalizers`.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesemantics import times
from kubesemantics.selectors import selector_text
from localkube.server import bodies, errors, patching
from localkube.server.auth import Authenticator
from localkube.server.rest import Query, Resources, clone
from localkube.server.routing import Target
from localkube.server.tables import jsonpath_values

# (namespace, pod, container, query) -> the log text, or its chunks as they come (`follow=true`).
LogText = str | AsyncIterator[bytes]
PodLogs = Callable[[str, str, str, Query], LogText]


@dataclass(frozen=True, slots=True)
class Call:
    """One request to a subresource, with what its handler may use."""

    resources: Resources
    authenticator: Authenticator
    pod_logs: PodLogs | None
    method: str
    target: Target
    body: bytes
    content_type: str
    query: Query

    @property
    def name(self) -> str:
        assert self.target.name is not None
        return self.target.name

    def decoded(self) -> dict[str, Any]:
        return bodies.decode(self.body, self.content_type)

    def only(self, method: str) -> None:
        if self.method != method:
            raise errors.method_not_allowed()


Handler = Callable[[Call], tuple[int, dict[str, Any] | LogText]]


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


def _scale(call: Call) -> tuple[int, dict[str, Any]]:
    resources, target = call.resources, call.target
    obj, scale = _scale_of(resources, target)
    if call.method == "GET":
        return 200, scale
    if call.method == "PUT":
        wanted = call.decoded()
    elif call.method == "PATCH":
        content_type = call.content_type.split(";")[0].strip()
        # A Scale has no lists, so a strategic merge is a plain merge.
        if content_type == patching.STRATEGIC_MERGE_PATCH:
            content_type = patching.MERGE_PATCH
        wanted = patching.patch(scale, call.body, content_type, None)
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
    resources.update(target.resource_type, target.namespace, target.name, updated, "scale", call.query)
    return 200, _scale_of(resources, target)[1]


def _log(call: Call) -> tuple[int, LogText]:
    call.only("GET")
    resources, target, query = call.resources, call.target, call.query
    assert target.name is not None and target.namespace is not None
    pod = resources.get(target.resource_type, target.namespace, target.name)
    container = pod_container(pod, target.name, query.get("container"))
    return 200, call.pod_logs(target.namespace, target.name, container, query) if call.pod_logs else ""


def pod_container(pod: dict[str, Any], name: str, wanted: str | None) -> str:
    """The container (or init container) a pod subresource request names (the only one when it names
    none), as the API server checks it."""
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or []]
    if not wanted:
        if len(names) != 1:
            raise errors.bad_request(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
            )
        return str(names[0])
    init_names = [c.get("name", "") for c in spec.get("initContainers") or []]
    if wanted not in names and wanted not in init_names:
        raise errors.bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _token(call: Call) -> tuple[int, dict[str, Any]]:
    call.only("POST")
    resources, authenticator, target, request = (
        call.resources,
        call.authenticator,
        call.target,
        call.decoded(),
    )
    assert target.name is not None and target.namespace is not None
    account = resources.get(target.resource_type, target.namespace, target.name)
    spec = request.get("spec") or {}
    seconds = int(spec.get("expirationSeconds") or 3600)
    token, expiry = authenticator.issue_service_account_token(
        target.namespace, target.name, account["metadata"]["uid"], seconds, list(spec.get("audiences") or [])
    )
    expires = times.format_time(datetime.datetime.fromtimestamp(expiry, datetime.UTC))
    return 201, {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": target.name, "namespace": target.namespace, "creationTimestamp": None},
        "spec": {**spec, "expirationSeconds": seconds},
        "status": {"token": token, "expirationTimestamp": expires},
    }


def _finalize(call: Call) -> tuple[int, dict[str, Any]]:
    call.only("PUT")
    resource_type = call.target.resource_type
    namespace = call.resources.get(resource_type, None, call.name)
    finalizers = (call.decoded().get("spec") or {}).get("finalizers") or []
    namespace.setdefault("spec", {})["finalizers"] = finalizers
    return 200, call.resources.update(resource_type, None, call.name, namespace, None, call.query)


# The subresources served here, by name; the application routes a request to its handler.
HANDLERS: Mapping[str, Handler] = {
    "scale": _scale,
    "log": _log,
    "token": _token,
    "finalize": _finalize,
}
