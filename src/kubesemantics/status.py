"""The metav1 `Status` body: what the API server answers for a refusal, a watch's ERROR event, or a
subresource whose reply is no object (pods/binding).

Members in the order Go's encoder writes them; `message`, `reason`, `details` and `code` are left out when
empty, as their `omitempty` tags do (a `details` of `{}` is a non-nil pointer and is written; a code of 0
is how a deletion's Success Status comes).
"""

from __future__ import annotations

from typing import Any


def status_body(
    code: int,
    message: str = "",
    reason: str = "",
    details: dict[str, Any] | None = None,
    *,
    success: bool = False,
) -> dict[str, Any]:
    """A `Status` with HTTP `code` (0: none), `Failure` unless `success`."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if success else "Failure",
    }
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    if code:
        body["code"] = code
    return body
