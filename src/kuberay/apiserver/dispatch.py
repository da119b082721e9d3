"""One call of a v1 method, whichever side it came in on (gRPC or the HTTP gateway): the request message
to a dict, the handler under the per-call timeout, the reply dict to the response message, and
go-grpc-prometheus's server metrics (`grpc_server_*`, with Go's code names).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry, Counter, Histogram

from kuberay.apiserver import errors, names
from kuberay.apiserver.backend import Backend, Handler
from kuberay.apiserver.protos import Method
from kuberay.runtime.resources import InvalidName

log = logging.getLogger("kuberay.apiserver")

# Go's codes.Code.String().
GO_CODE_NAMES = {
    code: "".join(part.capitalize() for part in code.name.split("_")) for code in grpc.StatusCode
} | {grpc.StatusCode.OK: "OK", grpc.StatusCode.CANCELLED: "Canceled"}

_LABELS = ("grpc_type", "grpc_service", "grpc_method")


class ServerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.started = Counter("grpc_server_started_total", "Total number of RPCs started on the server.",
                               _LABELS, registry=registry)  # fmt: skip
        self.handled = Counter("grpc_server_handled_total", "Total number of RPCs completed on the server, regardless of success or failure.",
                               (*_LABELS, "grpc_code"), registry=registry)  # fmt: skip
        self.received = Counter("grpc_server_msg_received_total", "Total number of RPC stream messages received on the server.",
                                _LABELS, registry=registry)  # fmt: skip
        self.sent = Counter("grpc_server_msg_sent_total", "Total number of gRPC stream messages sent by the server.",
                            _LABELS, registry=registry)  # fmt: skip
        self.seconds = Histogram("grpc_server_handling_seconds", "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
                                 _LABELS, registry=registry)  # fmt: skip


class Dispatcher:
    def __init__(self, handlers: dict[str, Handler], metrics: ServerMetrics | None, timeout: float) -> None:
        self._handlers = handlers
        self._metrics = metrics
        self._timeout = timeout

    def implemented(self, method: Method) -> bool:
        return method.full_name in self._handlers

    async def call(self, method: Method, request: Message, backend: Backend) -> Message:
        """The method's reply; `errors.UserError` on failure (any other exception becomes Internal)."""
        labels = ("unary", method.service, method.name)
        started = time.monotonic()
        if self._metrics:
            self._metrics.started.labels(*labels).inc()
            self._metrics.received.labels(*labels).inc()
        code = grpc.StatusCode.OK
        try:
            as_dict: dict[str, Any] = json_format.MessageToDict(request, preserving_proto_field_name=True)
            names.check(as_dict)
            try:
                reply = await asyncio.wait_for(
                    self._handlers[method.full_name](backend, as_dict), self._timeout
                )
            except TimeoutError:
                raise errors.UserError(
                    grpc.StatusCode.DEADLINE_EXCEEDED, "context deadline exceeded"
                ) from None
            response = method.response()
            json_format.ParseDict(_drop_empty(reply), response, ignore_unknown_fields=True)
            if self._metrics:
                self._metrics.sent.labels(*labels).inc()
            return response
        except errors.UserError as e:
            code = e.code
            log.warning("%s: %s", method.full_name, e.message)
            raise
        except InvalidName as e:  # a name deeper in the request (a compute template's) that no URL can carry
            code = grpc.StatusCode.INVALID_ARGUMENT
            log.warning("%s: %s", method.full_name, e)
            raise errors.invalid_input(str(e)) from e
        except Exception as e:
            code = grpc.StatusCode.INTERNAL
            log.exception("%s failed", method.full_name)
            raise errors.UserError(grpc.StatusCode.INTERNAL, "Internal Server Error", [str(e)]) from e
        finally:
            if self._metrics:
                self._metrics.handled.labels(*labels, GO_CODE_NAMES[code]).inc()
                self._metrics.seconds.labels(*labels).observe(time.monotonic() - started)


def _drop_empty(value: Any) -> Any:
    """None has no protobuf form: drop it (an absent field) wherever a converter left one."""
    if isinstance(value, dict):
        return {k: _drop_empty(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value
