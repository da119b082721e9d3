"""The root of the runtime's errors, `ControllerRuntimeError` (a `kuberay.errors.KubeRayError`), and under it
`KubeError`, the errors of the Kubernetes API boundary, mapped from HTTP status and the `Status` body's reason.
The runtime's other errors derive from the root: `client.ConfigurationError`, `controller.TemporaryError` and
`TerminalError`, `leaderelection.LeadershipLost`, `workqueue.ShutDown`. A cached object changed in place raises
`frozen.ReadOnlyError`, kubesemantics' `FrozenValueError` (a TypeError), shared with localkube's caches.

Callers branch on the class (`except NotFoundError`), never on numbers. Every error keeps the HTTP status, the
Status reason and message, and chains the transport error that caused it (`raise ... from cause`).
`AlreadyExistsError` and `ConflictError` are both HTTP 409 and are told apart by the Status reason, as client-go does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.errors import KubeRayError


class ControllerRuntimeError(KubeRayError):
    """An error of the controller runtime."""


class KubeError(ControllerRuntimeError):
    """An error answer from the API server (or no answer at all, for `Unavailable`)."""

    def __init__(
        self, message: str, *, status: int = 0, reason: str = "", details: Mapping[str, Any] | None = None
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.details: Mapping[str, Any] = details or {}


class NotFoundError(KubeError):
    """404."""


class ConflictError(KubeError):
    """409 with reason Conflict: a resourceVersion precondition failed; re-read and retry."""


class AlreadyExistsError(KubeError):
    """409 with reason AlreadyExists: a create named an object that exists."""


class Gone(KubeError):
    """410: the resourceVersion (or continue token) was compacted away; relist."""


class Invalid(KubeError):
    """422 (or 400): the object failed validation; retrying the same write cannot help."""


class Unauthorized(KubeError):
    """401."""


class Forbidden(KubeError):
    """403."""


class TooManyRequests(KubeError):
    """429: throttled by the server; retry later."""


class ServerError(KubeError):
    """5xx, or a status this module does not name."""


class Unavailable(KubeError):
    """The server could not be reached (connection refused, reset, timed out)."""


class OutcomeUnknown(Unavailable):
    """The request was sent but no answer came (the connection broke or timed out after sending): the server
    may have carried it out. A create that ends so may have made its object."""


class NotLeader(KubeError):
    """A write refused before it was sent: this replica can no longer be sure it holds the leader lease."""


_BY_STATUS: Mapping[int, type[KubeError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFoundError,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def from_status(status: int, body: Mapping[str, Any] | None) -> KubeError:
    """Builds the error for an HTTP status and a decoded `Status` body (which may be missing or not a Status)."""
    body = body if isinstance(body, Mapping) else {}
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or f"HTTP {status}")
    details = body.get("details") if isinstance(body.get("details"), Mapping) else None
    kind: type[KubeError]
    if status == 409:
        kind = AlreadyExistsError if reason == "AlreadyExists" else ConflictError
    else:
        kind = _BY_STATUS.get(status, ServerError)
    return kind(message, status=status, reason=reason, details=details)
