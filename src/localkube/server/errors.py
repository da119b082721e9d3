"""API errors as the real API server words them: one exception carrying a metav1 `Status`.

Every refusal the server makes is an `ApiError`; the app turns it into an HTTP reply whose body is the
`Status` object, so clients (kubectl, the official client, lightkube) see the codes, reasons and texts they
expect, for example `rayclusters.ray.io "x" not found` with reason NotFound and code 404.

`ServingError` (a `localkube.errors.LocalkubeError`) is the root of the server package's errors: `ApiError`
here, `asgi.ClientGone`, `streams.Disconnected`, `spdy.ProtocolError`, `webhooks.CallFailed`,
`audit.PolicyError` and `protobuf._Malformed` (ValueErrors).
"""

from __future__ import annotations

from typing import Any

from kubesemantics.status import status_body
from localkube.errors import LocalkubeError


class ServingError(LocalkubeError):
    """An error of localkube's API server."""


class ApiError(ServingError):
    """An error reply: HTTP `code`, metav1 `reason`, the human `message` and optional `details`."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        # An error the server cannot classify has no reason, as etcd's "request is too large".
        return status_body(self.code, self.message, self.reason, self.details)


def qualified(resource: str, group: str) -> str:
    """`pods` for the core group, `rayclusters.ray.io` otherwise: how the server names a resource."""
    return f"{resource}.{group}" if group else resource


def _details(name: str, resource: str, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found', _details(name, resource, group)
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        _details(name, resource, group),
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(name, resource, group),
    )


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def from_status(status: dict[str, Any]) -> ApiError:
    """An error whose reply is an already-built `Status` (for example an admission error's 422)."""
    return ApiError(int(status["code"]), str(status["reason"]), str(status["message"]), status.get("details"))


def invalid_option(options: str, field: str, reason: str, message: str) -> ApiError:
    """A refused request option (`fieldManager`, `dryRun`, ...), worded as the real server's validation of its
    `CreateOptions`/`PatchOptions`/... object: 422 Invalid, kind and group meta.k8s.io, one cause."""
    return ApiError(
        422,
        "Invalid",
        f'{options}.meta.k8s.io "" is invalid: {field}: {message}',
        {
            "causes": [{"reason": reason, "message": message, "field": field}],
            "group": "meta.k8s.io",
            "kind": options,
        },
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


# The largest request body the API server reads (its MaxRequestBodyBytes): twice etcd's request limit,
# as JSON is larger than the protobuf stored.
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024


def request_entity_too_large() -> ApiError:
    return ApiError(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"
    )


def storage_too_large() -> ApiError:
    """An object over the store's limit: the API server passes etcd's error on as a 500 without reason."""
    return ApiError(500, "", "etcdserver: request is too large")


def storage_full(message: str) -> ApiError:
    """A write the store has no disk space for, passed on as kube-apiserver passes etcd's "mvcc: database
    space exceeded": a 500 without reason whose message says what is wrong and what to do."""
    return ApiError(500, "", message)


def method_not_allowed() -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def page_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def unsupported_media_type(accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
    )
