"""`FieldError`: one validation failure, naming the field it concerns; `Errors`, what a rule yields."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """A rule that failed: `path` is the JSON path of the field (``spec.workerGroupSpecs[0].minReplicas``,
    ``metadata.annotations[ray.io/ft-enabled]``), `message` is upstream's exact error text."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def prefixed(self, prefix: str) -> FieldError:
        """The same failure with `prefix` in front of the message, as upstream wraps an inner error
        (``The RayJob spec is invalid: <inner>``)."""
        return FieldError(self.path, prefix + self.message)


Errors = Iterator[FieldError]
"""What a rule yields: its failures, in upstream's order."""
