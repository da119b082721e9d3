"""The errors of the patch engines, each carrying the API server's `Status` for the reply.

`PatchError.detail` is the engine's own text (evanphx/json-patch's for JSON patches, apimachinery's for
strategic merge); `status` is what the API server sends, which for a JSON patch that does not apply is the
generic 422 text, as the real server does. `ApplyConflict` is server-side apply's 409 with one cause per
conflicting field. Both derive from `PatchingError` (a `localkube.errors.LocalkubeError`), the patch package's
root.
"""

from __future__ import annotations

from typing import Any

from kubesemantics.status import status_body
from localkube.errors import LocalkubeError

_REASONS = {400: "BadRequest", 422: "Invalid", 500: "InternalError"}


class PatchingError(LocalkubeError):
    """An error of the patch engines."""


class PatchError(PatchingError):
    """A patch that cannot be decoded (400), does not apply to the object (422), or that the strategic merge
    cannot process (500, as apimachinery's unclassified errors are)."""

    def __init__(self, detail: str, code: int = 422) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code

    @property
    def status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.code == 422:
            message = "the server rejected our request due to an error in our request"
        elif self.code == 500:
            message = f"Internal error occurred: {self.detail}"
            details = {"causes": [{"message": self.detail}]}
        else:
            message = self.detail
        return status_body(self.code, message, _REASONS.get(self.code, "BadRequest"), details)


class ApplyConflict(PatchingError):
    """Server-side apply would take fields another manager owns.

    `conflicts` are (manager, field path) pairs: the manager as the API server prints it (`"kubectl"`, or
    `"kubectl-client-side-apply" using v1` for an Update manager) and the path in structured-merge-diff's
    form (`.spec.containers[name="c"].image`).
    """

    def __init__(self, conflicts: list[tuple[str, str]]) -> None:
        self.conflicts = conflicts
        if len(conflicts) == 1:
            manager, path = conflicts[0]
            self.message = f"Apply failed with 1 conflict: conflict with {manager}: {path}"
        else:
            lines: list[str] = []
            for manager in sorted({m for m, _ in conflicts}):
                lines.append(f"conflicts with {manager}:")
                lines.extend(f"- {path}" for m, path in conflicts if m == manager)
            self.message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
        super().__init__(self.message)

    @property
    def status(self) -> dict[str, Any]:
        causes = [
            {"reason": "FieldManagerConflict", "message": f"conflict with {manager}", "field": path}
            for manager, path in self.conflicts
        ]
        return status_body(409, self.message, "Conflict", {"causes": causes})
