"""The APIServer's protobuf schema: `proto/*.proto` compiled with grpcio-tools when first imported.

Nothing generated is written to the source tree: protoc builds a descriptor set in memory, and message
classes come from a private descriptor pool. Every service's methods, with the `google.api.http` rule that
gives each its REST route, are read from the same descriptors, so gRPC, the HTTP gateway and the OpenAPI
documents cannot disagree.
"""

from __future__ import annotations

import importlib.resources
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, MethodDescriptor
from google.protobuf.message import Message

from kuberay.apiserver.errors import ApiServerError

PACKAGE = "proto"
PROTO_FILES = (
    "cluster.proto",
    "config.proto",
    "error.proto",
    "job.proto",
    "job_submission.proto",
    "serve.proto",
)
# The services this server implements; ImageTemplateService is declared upstream but never served.
SERVED = (
    "ComputeTemplateService",
    "ClusterService",
    "RayJobService",
    "RayJobSubmissionService",
    "RayServeService",
)


class ProtoCompileError(ApiServerError, RuntimeError):
    """protoc refused the packaged .proto files."""


@dataclass(frozen=True)
class HttpRoute:
    method: str  # GET, POST, PUT, DELETE
    path: str  # with {field} placeholders
    body: str  # "" (no body), "*" or the request field the body fills


@dataclass(frozen=True)
class Method:
    service: str  # proto.ClusterService
    name: str  # CreateCluster
    request: type[Message]
    response: type[Message]
    route: HttpRoute

    @property
    def full_name(self) -> str:
        return f"/{self.service}/{self.name}"


def proto_dir() -> Path:
    return Path(str(importlib.resources.files("kuberay.apiserver") / "proto"))


def include_dirs() -> list[str]:
    """Where protoc finds our files, the well-known types (grpcio-tools) and google/api (googleapis-common-protos)."""
    import google.api
    import grpc_tools

    googleapis_root = Path(google.api.__path__[0]).parent.parent
    return [str(proto_dir()), str(Path(grpc_tools.__path__[0]) / "_proto"), str(googleapis_root)]


@cache
def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        args = ["protoc", *(f"-I{d}" for d in include_dirs()), f"--descriptor_set_out={out}",
                "--include_imports", *PROTO_FILES]  # fmt: skip
        if protoc.main(args) != 0 or not out.exists():
            raise ProtoCompileError(f"protoc failed on {proto_dir()}")
        # annotations_pb2 is imported above so the google.api.http option parses as an extension.
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


@cache
def pool() -> descriptor_pool.DescriptorPool:
    result = descriptor_pool.DescriptorPool()
    for file in descriptor_set().file:
        result.Add(file)
    return result


def _route(method: descriptor_pb2.MethodDescriptorProto) -> HttpRoute:
    rule: http_pb2.HttpRule = method.options.Extensions[annotations_pb2.http]
    kind = rule.WhichOneof("pattern")
    if kind is None or kind == "custom":
        raise ProtoCompileError(f"{method.name} has no REST route")
    return HttpRoute(kind.upper(), getattr(rule, kind), rule.body)


@cache
def methods() -> tuple[Method, ...]:
    found: list[Method] = []
    for file in descriptor_set().file:
        if file.package != PACKAGE:
            continue
        for service in file.service:
            if service.name not in SERVED:
                continue
            described = pool().FindServiceByName(f"{PACKAGE}.{service.name}")
            for method_proto in service.method:
                method: MethodDescriptor = described.methods_by_name[method_proto.name]
                request: Descriptor = method.input_type
                response: Descriptor = method.output_type
                found.append(
                    Method(
                        described.full_name,
                        method.name,
                        message_factory.GetMessageClass(request),
                        message_factory.GetMessageClass(response),
                        _route(method_proto),
                    )  # fmt: skip
                )
    return tuple(found)
