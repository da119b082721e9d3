"""The gRPC side (port 8887): every implemented v1 method as a generic unary handler over the compiled
messages, server reflection, the caller checked by the same `Auth` as HTTP, messages up to 2^31-1 bytes."""

from __future__ import annotations

from typing import Any

import grpc
from grpc_reflection.v1alpha import reflection

from kuberay.apiserver import errors, protos
from kuberay.apiserver.auth import Auth
from kuberay.apiserver.dispatch import Dispatcher
from kuberay.apiserver.protos import Method

MAX_MESSAGE = 2**31 - 1


def _handler(method: Method, dispatcher: Dispatcher, auth: Auth) -> grpc.RpcMethodHandler:
    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        metadata = dict(context.invocation_metadata() or ())
        try:
            backend = await auth.backend_for(metadata.get("authorization"))
            return await dispatcher.call(method, request, backend)
        except errors.UserError as e:
            await context.abort(e.code, e.message)

    return grpc.unary_unary_rpc_method_handler(
        unary,
        request_deserializer=method.request.FromString,
        response_serializer=method.response.SerializeToString,
    )


def build_server(dispatcher: Dispatcher, auth: Auth) -> grpc.aio.Server:
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_MESSAGE),
                                      ("grpc.max_send_message_length", MAX_MESSAGE)])  # fmt: skip
    by_service: dict[str, dict[str, grpc.RpcMethodHandler]] = {}
    for method in protos.methods():
        if dispatcher.implemented(method):
            by_service.setdefault(method.service, {})[method.name] = _handler(method, dispatcher, auth)
    server.add_generic_rpc_handlers(
        tuple(
            grpc.method_handlers_generic_handler(service, handlers)
            for service, handlers in by_service.items()
        )
    )
    reflection.enable_server_reflection((*by_service, reflection.SERVICE_NAME), server, pool=protos.pool())
    return server
