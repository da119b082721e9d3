"""What a list or watch request may ask, checked as kube-apiserver checks its ListOptions before serving:
each kind's selectable fields (the field label conversions of its scheme), `resourceVersionMatch`'s rules,
and a `resourceVersion` that is a number.
"""

from __future__ import annotations

from kubesemantics.selectors import SelectorError, field_terms
from localkube.server import errors
from localkube.server.errors import ApiError
from localkube.server.registry import ResourceType

_META = ("metadata.name", "metadata.namespace")
_EVENT_FIELDS = (
    *_META,
    *(
        f"involvedObject.{f}"
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    ),
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_EVENTS_API_FIELDS = (
    *_META,
    *(
        f"regarding.{f}"
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    ),
    "reason",
    "reportingController",
    "type",
)
# (group, kind) -> the field labels its scheme converts; every other built-in kind has the default
# conversion (metadata.name and metadata.namespace, with its own refusal).
_SELECTABLE: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): (
        *_META, "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName",
    ),
    ("", "Node"): ("metadata.name", "spec.unschedulable"),
    ("", "ReplicationController"): (*_META, "status.replicas"),
    ("", "Event"): _EVENT_FIELDS,
    ("events.k8s.io", "Event"): _EVENTS_API_FIELDS,
    ("", "Namespace"): ("status.phase", "metadata.name"),
    ("", "Secret"): ("type", *_META),
    ("", "Service"): (*_META, "spec.clusterIP", "spec.type"),
    ("batch", "Job"): (*_META, "status.successful"),
}  # fmt: skip
_MATCHES = ("Exact", "NotOlderThan")


def check(resource_type: ResourceType, query: dict[str, str], *, watch: bool) -> None:
    """Refuses (400 or 422) what the real server refuses of a list or watch request's options."""
    try:
        terms = field_terms(query.get("fieldSelector"))
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from exc
    for path, _, _ in terms:
        _check_field(resource_type, path)
    version = query.get("resourceVersion", "")
    if not watch:
        _check_match(query.get("resourceVersionMatch", ""), version, query.get("continue", ""))
        # Storage parses it as it lists (a watch's is answered in its stream).
        if version and not version.isdigit():
            raise errors.bad_request(
                f'invalid resource version: resourceVersion: Invalid value: "{version}": '
                f'strconv.ParseUint: parsing "{version}": invalid syntax'
            )


def _check_field(resource_type: ResourceType, path: str) -> None:
    if resource_type.custom:
        if path not in _META:
            raise errors.bad_request(f"field label not supported: {path}")
        return
    selectable = _SELECTABLE.get((resource_type.group, resource_type.kind))
    if selectable is None:
        if path not in _META:
            raise errors.bad_request(
                f'"{path}" is not a known field selector: only "metadata.name", "metadata.namespace"'
            )
    elif path not in selectable:
        why = (
            f'field label "{path}" not supported for Job'
            if resource_type.kind == "Job"
            else f"field label not supported: {path}"
        )
        raise errors.bad_request(why)


def _check_match(match: str, version: str, token: str) -> None:
    if not match:
        return
    problems: list[tuple[str, str]] = []
    if not version:
        problems.append(
            ("FieldValueForbidden", "resourceVersionMatch is forbidden unless resourceVersion is provided")
        )
    if token:
        problems.append(
            ("FieldValueForbidden", "resourceVersionMatch is forbidden when continue is provided")
        )
    if match not in _MATCHES:
        supported = '"Exact", "NotOlderThan", ""'
        problems.append(
            ("FieldValueNotSupported", f'Unsupported value: "{match}": supported values: {supported}')
        )
    if match == "Exact" and version == "0":
        problems.append(
            ("FieldValueForbidden", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
        )
    if not problems:
        return
    causes = [
        (reason, detail if reason != "FieldValueForbidden" else f"Forbidden: {detail}")
        for reason, detail in problems
    ]
    if len(causes) == 1:
        raise errors.invalid_option("ListOptions", "resourceVersionMatch", *causes[0])
    listed = ", ".join(f"resourceVersionMatch: {message}" for _, message in causes)
    raise ApiError(
        422,
        "Invalid",
        f'ListOptions.meta.k8s.io "" is invalid: [{listed}]',
        {
            "causes": [{"reason": r, "message": m, "field": "resourceVersionMatch"} for r, m in causes],
            "group": "meta.k8s.io",
            "kind": "ListOptions",
        },
    )
