"""The HTTP side (port 8888): upstream's grpc-gateway routes for every v1 method, read from the methods'
`google.api.http` rules, with its JSON conventions (lowerCamelCase names, enums as numbers, zero values
left out, unknown request fields ignored) and error bodies (`{"code", "message", "details"}` with the HTTP
status of the gRPC code); `/healthz`, `/metrics`, the OpenAPI documents and Swagger UI; and apiserversdk's
v2 proxy when enabled.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from fastapi import FastAPI
from google.protobuf import json_format
from google.protobuf.message import Message
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.staticfiles import StaticFiles

from kuberay.apiserver import errors, swagger
from kuberay.apiserver.auth import Auth
from kuberay.apiserver.dispatch import Dispatcher
from kuberay.apiserver.protos import Method, methods

CORS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
Endpoint = Callable[[Request], Awaitable[Response]]


class Health:
    """`/healthz` answers 200 until the server is told to stop (then 503, as upstream after an interrupt)."""

    def __init__(self) -> None:
        self.stopping = False


def error_response(error: errors.UserError) -> JSONResponse:
    return JSONResponse(error.http_body(), status_code=error.http_status)


def to_json(message: Message) -> dict[str, Any]:
    result: dict[str, Any] = json_format.MessageToDict(message, use_integers_for_enums=True)
    return result


async def _request_message(method: Method, request: Request) -> Message:
    """The request message from the path, the query string and the body, as grpc-gateway fills it."""
    message = method.request()
    fields: dict[str, Any] = {}
    for key, value in request.query_params.multi_items():
        fields.setdefault(key, value)
    fields.update(request.path_params)
    body_field = method.route.body
    if body_field:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError as e:
            raise errors.invalid_input(f"request body: not JSON: {e}") from e
        if body_field == "*":
            if not isinstance(body, dict):
                raise errors.invalid_input("request body: a JSON object is expected")
            fields.update(body)
        else:
            fields[body_field] = body
    try:
        json_format.ParseDict(fields, message, ignore_unknown_fields=True)
    except json_format.ParseError as e:
        raise errors.invalid_input(str(e)) from e
    return message


def _endpoint(method: Method, dispatcher: Dispatcher, auth: Auth) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        try:
            backend = await auth.backend_for(request.headers.get("authorization"))
            message = await _request_message(method, request)
            reply = await dispatcher.call(method, message, backend)
        except errors.UserError as e:
            return error_response(e)
        return JSONResponse(to_json(reply))

    return endpoint


def _install_swagger(app: FastAPI, swagger_dir: str) -> None:
    @app.get("/swagger/{name}", include_in_schema=False)
    async def document(name: str) -> Response:
        if not name.endswith("swagger.json"):
            return Response("404 page not found\n", status_code=404, media_type="text/plain")
        if swagger_dir:
            # Upstream's -localSwaggerPath: the files of that directory, as they are.
            path = Path(swagger_dir) / Path(name).name
            if not path.is_file():
                return Response("404 page not found\n", status_code=404, media_type="text/plain")
            return Response(path.read_bytes(), media_type="application/json")
        docs = swagger.documents()
        if name not in docs:
            return Response("404 page not found\n", status_code=404, media_type="text/plain")
        return JSONResponse(docs[name])

    @app.get("/swagger-ui/", include_in_schema=False)
    async def index() -> Response:
        return HTMLResponse(swagger.index_html())

    app.mount("/swagger-ui", StaticFiles(directory=swagger.ui_dir()), name="swagger-ui")


def build_app(dispatcher: Dispatcher, auth: Auth, registry: CollectorRegistry | None, health: Health, *,
              cors_allow_origin: str = "", extra: Callable[[FastAPI], None] | None = None,
              swagger_dir: str = "") -> FastAPI:  # fmt: skip
    app = FastAPI(title="kuberay-apiserver", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return Response(status_code=503 if health.stopping else 200)

    _install_swagger(app, swagger_dir)

    if registry is not None:

        @app.get("/metrics", include_in_schema=False)
        async def metrics() -> Response:
            return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    if extra is not None:
        extra(app)
    # Literal segments before variables: `.../{cluster}/log/{id}` before `.../{cluster}/{id}`.
    for method in sorted(methods(), key=lambda m: -m.route.path.count("/")):
        if dispatcher.implemented(method):
            app.add_api_route(method.route.path, _endpoint(method, dispatcher, auth), methods=[method.route.method],
                              include_in_schema=False)  # fmt: skip

    @app.exception_handler(HTTPException)
    async def not_routed(request: Request, exc: HTTPException) -> Response:
        # grpc-gateway's answers for a path or a verb it has no route for.
        if exc.status_code == 405:
            error = errors.UserError(grpc.StatusCode.UNIMPLEMENTED, "Method Not Allowed")
            return JSONResponse(error.http_body(), status_code=405)
        if exc.status_code == 404:
            return error_response(errors.UserError(grpc.StatusCode.NOT_FOUND, "Not Found"))
        return JSONResponse({"message": str(exc.detail)}, status_code=exc.status_code)

    if cors_allow_origin:
        app.add_middleware(CORSMiddleware, allow_origins=[cors_allow_origin], allow_methods=CORS_METHODS,
                           allow_headers=["*"])  # fmt: skip
    return app
