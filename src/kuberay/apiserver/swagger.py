"""OpenAPI v2 documents of the v1 API, made from the compiled descriptors as protoc-gen-openapiv2 makes them
(one per .proto file, `/swagger/<file>.swagger.json`, and `kuberay_api.swagger.json` merging them), and the
Swagger UI's files from the `swagger-ui-bundle` package (served at `/swagger-ui/`, no CDN).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import swagger_ui_bundle
from google.protobuf.descriptor import FieldDescriptor

from kuberay.apiserver import protos

Object = dict[str, Any]

MERGED = "kuberay_api.swagger.json"
_SCALARS: dict[int, Object] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_INT64: {"type": "string", "format": "int64"},
    FieldDescriptor.TYPE_UINT64: {"type": "string", "format": "uint64"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "format": "float"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
}
_WELL_KNOWN: dict[str, Object] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Empty": {"type": "object"},
}


def _name(full_name: str) -> str:
    """protoc-gen-openapiv2's definition name: the package and the (nested) message names run together."""
    package, _, rest = full_name.partition(".")
    return package + rest.replace(".", "")


class _Builder:
    """Descriptors are typed Any: the pure-Python and upb implementations have distinct classes."""

    def __init__(self) -> None:
        self.definitions: dict[str, Object] = {}

    def ref(self, full_name: str) -> Object:
        return {"$ref": f"#/definitions/{_name(full_name)}"}

    def enum(self, enum: Any) -> Object:
        name = _name(enum.full_name)
        if name not in self.definitions:
            values = [v.name for v in enum.values]
            self.definitions[name] = {"type": "string", "enum": values, "default": values[0]}
        return self.ref(enum.full_name)

    def message(self, message: Any) -> Object:
        if message.full_name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[message.full_name])
        name = _name(message.full_name)
        if name not in self.definitions:
            self.definitions[name] = {}  # placeholder: recursive messages refer to it
            properties = {f.json_name: self.field(f) for f in message.fields}
            self.definitions[name] = {"type": "object", "properties": properties}
        return self.ref(message.full_name)

    def single(self, field: Any) -> Object:
        if field.type == FieldDescriptor.TYPE_ENUM:
            return self.enum(field.enum_type)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            return self.message(field.message_type)
        return dict(_SCALARS[field.type])

    def field(self, field: Any) -> Object:
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            return {
                "type": "object",
                "additionalProperties": self.single(field.message_type.fields_by_name["value"]),
            }
        if field.is_repeated:
            return {"type": "array", "items": self.single(field)}
        return self.single(field)


def _operation(builder: _Builder, method: protos.Method) -> Object:
    request = method.request.DESCRIPTOR
    in_path = set(re.findall(r"{(\w+)}", method.route.path))
    parameters: list[Object] = []
    for name in re.findall(r"{(\w+)}", method.route.path):
        parameters.append(
            {"name": name, "in": "path", "required": True, **_SCALARS[request.fields_by_name[name].type]}
        )
    body = method.route.body
    if body:
        schema = builder.message(request) if body == "*" else builder.field(request.fields_by_name[body])
        parameters.append(
            {"name": body if body != "*" else "body", "in": "body", "required": True, "schema": schema}
        )
    else:
        for field in request.fields:
            if field.name not in in_path and field.type != FieldDescriptor.TYPE_MESSAGE:
                parameters.append(
                    {"name": field.json_name, "in": "query", "required": False, **builder.single(field)}
                )
    return {
        "operationId": f"{method.service.rpartition('.')[2]}_{method.name}",
        "responses": {
            "200": {
                "description": "A successful response.",
                "schema": builder.message(method.response.DESCRIPTOR),
            },
            "default": {
                "description": "An unexpected error response.",
                "schema": {"$ref": "#/definitions/rpcStatus"},
            },
        },
        "parameters": parameters,
        "tags": [method.service.rpartition(".")[2]],
    }


def _document(title: str, methods: list[protos.Method]) -> Object:
    builder = _Builder()
    paths: dict[str, Object] = {}
    for method in methods:
        paths.setdefault(method.route.path, {})[method.route.method.lower()] = _operation(builder, method)
    builder.definitions["protobufAny"] = {"type": "object", "properties": {"@type": {"type": "string"}},
                                          "additionalProperties": {}}  # fmt: skip
    builder.definitions["rpcStatus"] = {"type": "object", "properties": {
        "code": {"type": "integer", "format": "int32"}, "message": {"type": "string"},
        "details": {"type": "array", "items": {"$ref": "#/definitions/protobufAny"}}}}  # fmt: skip
    return {
        "swagger": "2.0",
        "info": {"title": title, "version": "version not set"},
        "tags": [{"name": t} for t in dict.fromkeys(m.service.rpartition(".")[2] for m in methods)],
        "schemes": ["http"],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "paths": paths,
        "definitions": builder.definitions,
    }


@cache
def documents() -> dict[str, Object]:
    """File name -> document, for every .proto file with services, and the merged one."""
    by_file: dict[str, list[protos.Method]] = {}
    for method in protos.methods():
        by_file.setdefault(protos.pool().FindServiceByName(method.service).file.name, []).append(method)
    result = {f"{Path(name).stem}.swagger.json": _document(name, ms) for name, ms in by_file.items()}
    result[MERGED] = _document("KubeRay API", list(protos.methods()))
    return result


def ui_dir() -> Path:
    """The Swagger UI's static files, from the swagger-ui-bundle package."""
    return Path(swagger_ui_bundle.swagger_ui_path)


INDEX = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="UTF-8"><title>KubeRay API</title>
<link rel="stylesheet" type="text/css" href="swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="swagger-ui-bundle.js"></script>
<script src="swagger-ui-standalone-preset.js"></script>
<script>
window.onload = function () {
  window.ui = SwaggerUIBundle({
    urls: URLS,
    "urls.primaryName": "kuberay_api.swagger.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout"
  });
};
</script>
</body>
</html>
"""


def index_html() -> str:
    import json

    urls = [
        {"name": name, "url": f"/swagger/{name}"} for name in sorted(documents(), key=lambda n: n != MERGED)
    ]
    return INDEX.replace("URLS", json.dumps(urls))
