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
# events.k8s.io names the same fields its own way, and has no selectable source.
_EVENTS_API_FIELDS = tuple(
    f.replace("involvedObject.", "regarding.").replace("reportingComponent", "reportingController")
    for f in _EVENT_FIELDS
    if f != "source"
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
    match, token = query.get("resourceVersionMatch", ""), query.get("continue", "")
    if watch:
        _refuse(_watch_match_problems(match, query.get("sendInitialEvents"), token))
    else:
        _refuse(_list_match_problems(match, version, token))
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


def _list_match_problems(match: str, version: str, token: str) -> list[tuple[str, str]]:
    if not match:
        return []
    problems: list[tuple[str, str]] = []
    if not version:
        problems.append(_forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided"))
    if token:
        problems.append(_forbidden("resourceVersionMatch is forbidden when continue is provided"))
    if match not in _MATCHES:
        problems.append(_not_supported(match, '"Exact", "NotOlderThan", ""'))
    if match == "Exact" and version == "0":
        problems.append(_forbidden('resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    return problems


def _watch_match_problems(match: str, send_initial_events: str | None, token: str) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if send_initial_events is not None and match != "NotOlderThan":
        problems.append(_forbidden("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
    if match:
        if send_initial_events is None:
            problems.append(
                _forbidden("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
            )
        if match != "NotOlderThan":
            problems.append(_not_supported(match, '"NotOlderThan"'))
        if token:
            problems.append(_forbidden("resourceVersionMatch is forbidden when continue is provided"))
    return problems


def _forbidden(detail: str) -> tuple[str, str]:
    return "FieldValueForbidden", f"Forbidden: {detail}"


def _not_supported(value: str, supported: str) -> tuple[str, str]:
    return "FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {supported}'


def _refuse(causes: list[tuple[str, str]]) -> None:
    """The 422 of ListOptions' validation with its causes (all on resourceVersionMatch)."""
    if not causes:
        return
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
