"""Errors as upstream's APIServer reports them: a gRPC code, and a message made of the message for the user
followed by the chain of what failed (`<external>: <wrap>: ...: <cause>`), and their HTTP form.

The HTTP status of a gRPC code and the error body `{"code", "message", "details"}` are grpc-gateway's.

`ApiServerError` (a `kuberay.errors.KubeRayError`) is the root of the APIServer's errors: `UserError` here,
`proxy.MiddlewareError` (the v2 proxy's refusals), `protos.ProtoCompileError` (a RuntimeError) and
`volumes.VolumeSpecError` (a ValueError).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc

from kuberay.errors import KubeRayError

# grpc-gateway's HTTPStatusFromCode.
HTTP_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
}


class ApiServerError(KubeRayError):
    """An error of the KubeRay APIServer."""


@dataclass
class UserError(ApiServerError):
    """Upstream's `util.UserError`: an error with the message a user sees and the chain of contexts it
    passed through."""

    code: grpc.StatusCode
    external: str
    chain: list[str] = field(default_factory=list)

    def wrap(self, context: str) -> UserError:
        self.chain.insert(0, context)
        return self

    @property
    def message(self) -> str:
        return ": ".join([self.external, *self.chain]) if self.chain else self.external

    def __str__(self) -> str:
        return self.message

    def http_body(self) -> dict[str, object]:
        return {"code": self.code.value[0], "message": self.message, "details": []}

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.code, 500)


def invalid_input(message: str) -> UserError:
    return UserError(grpc.StatusCode.INVALID_ARGUMENT, message, [f"Invalid input error: {message}"])


def already_exists(message: str) -> UserError:
    return UserError(grpc.StatusCode.ALREADY_EXISTS, message, [f"Already exist error: {message}"])


def not_found(message: str, cause: Exception) -> UserError:
    return UserError(grpc.StatusCode.NOT_FOUND, message, [f"NotFoundError: {message}", str(cause)])


# A Kubernetes refusal keeps its meaning (a caller acting with their own token sees why), where upstream,
# acting only as itself, reports Internal.
_REFUSALS = {401: grpc.StatusCode.UNAUTHENTICATED, 403: grpc.StatusCode.PERMISSION_DENIED}


def internal(message: str, cause: Exception) -> UserError:
    """The user sees only "Internal Server Error" first; what failed follows in the chain."""
    code = _REFUSALS.get(getattr(cause, "status", 0), grpc.StatusCode.INTERNAL)
    return UserError(code, "Internal Server Error", [f"InternalServerError: {message}", str(cause)])


def unknown(message: str) -> UserError:
    """A plain error upstream returns without a code (gRPC's Unknown)."""
    return UserError(grpc.StatusCode.UNKNOWN, message)


def unauthenticated(message: str) -> UserError:
    return UserError(grpc.StatusCode.UNAUTHENTICATED, message)
