"""Field errors and the 422 Invalid error, rendered exactly as the Kubernetes API server renders them.

A `FieldError` is one cause (`spec.x: Invalid value: 5: ...`); an `AdmissionError` gathers the causes of one
refused object into the API server's message (`Kind.group "name" is invalid: [a, b]`) and `Status` body.
Rendering follows apimachinery's `field.Error.ErrorBody` and `errors.NewInvalid`: scalars print bare, strings
print Go-quoted, composite values print as JSON, and duplicate messages are dropped from the aggregate.
`AdmissionControlError` (a `localkube.errors.LocalkubeError`) is the admission package's root, over
`AdmissionError` and `SchemaInvalid`; a `FieldError` is a value, not an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

# The cause types are re-exported: callers name them `errors.INVALID`, next to `FieldError`.
from kubesemantics.schema import (
    DUPLICATE as DUPLICATE,
)
from kubesemantics.schema import (
    FORBIDDEN as FORBIDDEN,
)
from kubesemantics.schema import (
    INTERNAL as INTERNAL,
)
from kubesemantics.schema import (
    INVALID as INVALID,
)
from kubesemantics.schema import (
    NOT_FOUND as NOT_FOUND,
)
from kubesemantics.schema import (
    REQUIRED as REQUIRED,
)
from kubesemantics.schema import (
    TOO_LONG as TOO_LONG,
)
from kubesemantics.schema import (
    TOO_MANY as TOO_MANY,
)
from kubesemantics.schema import (
    UNSUPPORTED as UNSUPPORTED,
)
from kubesemantics.schema import render_value
from kubesemantics.status import status_body
from localkube.errors import LocalkubeError

_REASONS: Final = {
    REQUIRED: "FieldValueRequired",
    INVALID: "FieldValueInvalid",
    UNSUPPORTED: "FieldValueNotSupported",
    FORBIDDEN: "FieldValueForbidden",
    TOO_LONG: "FieldValueTooLong",
    TOO_MANY: "FieldValueTooMany",
    DUPLICATE: "FieldValueDuplicate",
    NOT_FOUND: "FieldValueNotFound",
    INTERNAL: "InternalError",
}

# These types never show the offending value, whatever it is.
_VALUELESS: Final = frozenset({REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL})


class _Omitted:
    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Final = _Omitted()
"""A `FieldError.value` that is not shown (apimachinery's omitValue)."""


@dataclass(frozen=True)
class FieldError:
    """One cause of a refusal: the field path, the cause type text, the bad value and a detail."""

    path: str
    type: str
    value: Any = None
    detail: str = ""
    reason: str = field(default="", compare=False)
    """The cause's machine-readable reason when it differs from the type's usual one (FieldValueTypeInvalid)."""

    @property
    def cause_reason(self) -> str:
        return self.reason or _REASONS.get(self.type, "FieldValueInvalid")

    def body(self) -> str:
        """The message without the field path (a Status cause's `message`)."""
        text = self.type
        if self.type not in _VALUELESS and self.value is not OMITTED:
            text = f"{self.type}: {render_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}"


def aggregate(errors: list[FieldError]) -> str:
    """The errors as apimachinery's aggregate prints them: one bare, several in brackets, no repeats."""
    messages = list(dict.fromkeys(str(error) for error in errors))
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


class AdmissionControlError(LocalkubeError):
    """An error of admission."""


class SchemaInvalid(AdmissionControlError):
    """An object broke its schema; the owner of the object's identity turns this into an `AdmissionError`."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__(aggregate(errors))
        self.errors = errors


class AdmissionError(AdmissionControlError):
    """An object refused with 422 Invalid, carrying the API server's message and `Status` body."""

    def __init__(self, kind: str, group: str, name: str, errors: list[FieldError]) -> None:
        self.kind = kind
        self.group = group
        self.name = name
        self.errors = errors
        qualified = f"{kind}.{group}" if group else kind
        self.message = f"{qualified} {json.dumps(name)} is invalid"
        if errors:
            self.message += f": {aggregate(errors)}"
        super().__init__(self.message)

    @property
    def status(self) -> dict[str, Any]:
        return status_body(422, self.message, "Invalid", self._details())

    def _details(self) -> dict[str, Any]:
        # Empty members are left out, as Go's omitempty does.
        details: dict[str, Any] = {
            k: v for k, v in (("name", self.name), ("group", self.group), ("kind", self.kind)) if v
        }
        details["causes"] = [
            {
                "reason": error.cause_reason,
                "message": error.body(),
                **({"field": error.path} if error.path else {}),
            }
            for error in self.errors
        ]
        return details
