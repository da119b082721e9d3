"""The ASGI application: routing, authentication, authorization, content negotiation and replies.

A plain ASGI callable with a small hand-written router, to keep per-request overhead low. A request is
routed by its path into one of: health and version, discovery, OpenAPI, or a resource request
(`/api/v1/...` and `/apis/<group>/<version>/...`, optionally under `namespaces/<ns>/`, with a name and a
subresource). Resource requests are authenticated (bearer token; none or a wrong one is a 401), take on
the identity they impersonate (see impersonation.py), are authorized (the admin always; anyone else by
RBAC), handed to `Resources` and answered in JSON, as a Table, or as a watch stream. Every refusal is
an `ApiError` answered with its `Status`. As on a real API server, a body over 3 MiB is a 413 (read no
further) and an object over the store's limit (etcd's 1.5 MiB) a 500 in etcd's words. One line per
request is logged at debug level.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, parse_qsl

import orjson

from kubesemantics.selectors import SelectorError, field_matcher, label_matcher
from localkube import __version__
from localkube.server import bodies, errors, impersonation, podstreams, proxy, subresources, webhooks
from localkube.server import warnings as recorded_warnings
from localkube.server.audit import RESPONSE_COMPLETE, RESPONSE_STARTED, AuditLog
from localkube.server.auth import Authenticator
from localkube.server.discovery import AGGREGATED_CONTENT_TYPE, Discovery, wants_aggregated
from localkube.server.errors import ApiError
from localkube.server.faults import Faults
from localkube.server.openapi import OpenApi
from localkube.server.patching import APPLY, PATCH_TYPES
from localkube.server.rbac import Authorizer, RequestAttributes, UserInfo, forbidden_error
from localkube.server.registry import ResourceType
from localkube.server.rest import Resources
from localkube.server.rest.common import Query, clone, is_dry_run
from localkube.server.reviews import Reviews
from localkube.server.routing import (
    JSON,
    Receive,
    Reply,
    Request,
    Scope,
    Send,
    StreamReply,
    Target,
    request_verb,
)
from localkube.server.streams import WebSocket
from localkube.server.tables import table
from localkube.server.watch import stream
from localkube.storage import SpaceExceeded, TooLarge

log = logging.getLogger("localkube.server")

_HEALTH = frozenset({"livez", "readyz", "healthz"})
_WRITES = frozenset({"create", "update", "patch", "delete"})
# Rounds of admission for one write when the object changes while webhooks are called.
_ADMISSION_ATTEMPTS = 5
_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-localkube",
    "gitCommit": __version__,
    "gitTreeState": "clean",
    "buildDate": "2026-11-30T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _headers(scope: Scope) -> dict[str, str]:
    """A request's headers by lower-case name (a repeated header keeps its last value)."""
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


def _json(obj: Any, status: int = 200) -> Reply:
    return Reply(status, orjson.dumps(obj))


def _error_reply(error: ApiError) -> Reply:
    return Reply(error.code, orjson.dumps(error.status()))


class App:
    """The API server as an ASGI application over `resources`, authenticating with `authenticator`."""

    def __init__(
        self,
        resources: Resources,
        authenticator: Authenticator,
        pod_logs: subresources.PodLogs | None = None,
        pod_proxy: proxy.Proxy | None = None,
        faults: Faults | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.resources = resources
        self.faults = faults
        self.audit = audit
        self.pod_proxy = pod_proxy
        self.registry = resources.registry
        self.authenticator = authenticator
        rbac_types = {t.plural: t for t in self.registry.resources("rbac.authorization.k8s.io", "v1")}
        self.authorizer = Authorizer(lambda plural: resources.store.list(rbac_types[plural].prefix(None))[0])
        self.discovery = Discovery(self.registry)
        self.openapi = OpenApi(self.registry)
        self.pod_logs = pod_logs
        self.reviews = Reviews(authenticator, self.authorizer)
        self.pod_streams = podstreams.PodStreams(resources)
        self.webhooks = webhooks.Webhooks(
            resources.store, self.registry, pod_proxy or proxy.Proxy(resources.store)
        )
        self.ready = True

    # -- ASGI -------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        proxy_target = proxy.parse(scope["path"]) if self.pod_proxy is not None else None
        # What the proxy passes on to a pod is not the API server's to limit; API requests are.
        limit = None if proxy_target is not None else errors.MAX_REQUEST_BODY_BYTES
        try:
            body = await _read_body(receive, limit)
        except _ClientGone:
            log.warning(
                "dropped %s %s: the client went before its body was whole", scope["method"], scope["path"]
            )
            return
        request = Request(
            scope["method"],
            scope["path"],
            dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)),
            _headers(scope),
            body or b"",
            impersonation.requested(scope["headers"]),
        )
        reply: Reply | StreamReply
        try:
            if body is None:
                raise errors.request_entity_too_large()
            if proxy_target is not None:
                reply = await self._proxy(request, proxy_target, scope["query_string"].decode("latin-1"))
            else:
                reply = await self.handle(request)
        except ApiError as error:
            reply = _error_reply(error)
        except TooLarge:
            reply = _error_reply(errors.storage_too_large())
        except SpaceExceeded as full:
            log.warning("refused %s %s: %s", request.method, request.path, full)
            reply = _error_reply(errors.storage_full(str(full)))
        except Exception:
            log.exception("internal error serving %s %s", request.method, request.path)
            reply = _error_reply(ApiError(500, "InternalError", "an internal error occurred"))
        if self.audit is not None:
            # Before the answer leaves: the client's next request can be served as soon as it has.
            self._audit(scope, request, started, reply)
        if isinstance(reply, StreamReply):
            await _send_stream(reply, receive, send)
            status = 200
        else:
            await send(
                {
                    "type": "http.response.start",
                    "status": reply.status,
                    "headers": [
                        (b"content-type", reply.content_type.encode()),
                        (b"content-length", str(len(reply.body)).encode()),
                        *((b"warning", _warning(text)) for text in reply.warnings),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": reply.body})
            status = reply.status
        if log.isEnabledFor(logging.DEBUG):
            query = scope["query_string"].decode("latin-1")
            log.debug(
                "%s %s%s %d %.1fms user=%s",
                request.method,
                request.path,
                "?" + query if query else "",
                status,
                (time.perf_counter() - started) * 1000,
                request.user.name if request.user else "-",
            )

    def _audit(self, scope: Scope, request: Request, started: float, reply: Reply | StreamReply) -> None:
        assert self.audit is not None
        query = scope["query_string"].decode("latin-1")
        elapsed = datetime.timedelta(seconds=time.perf_counter() - started)
        # A stream (a watch) is logged as it starts, with no body.
        answered = reply if isinstance(reply, Reply) else None
        self.audit.record(
            request,
            uri=scope["path"] + ("?" + query if query else ""),
            source=(scope.get("client") or ("",))[0],
            received=datetime.datetime.now(datetime.UTC) - elapsed,
            status=answered.status if answered is not None else 200,
            answer=answered.body if answered is not None else None,
            stage=RESPONSE_COMPLETE if answered is not None else RESPONSE_STARTED,
        )

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket request: pods/exec and pods/portforward (see podstreams.py); anything else is refused
        before the upgrade, with a Status."""
        socket = WebSocket(receive, send)
        headers = _headers(scope)
        query_string = scope["query_string"].decode("latin-1")
        try:
            user = self._identify(headers.get("authorization"), impersonation.requested(scope["headers"]))
            segments = [s for s in scope["path"].split("/") if s]
            if not segments or segments[0] not in ("api", "apis") or len(segments) < 3:
                raise errors.page_not_found()
            target = self._route(segments)
            if target.resource_type.plural != "pods" or target.subresource not in podstreams.SUBRESOURCES:
                raise errors.bad_request(
                    "only pods/exec, pods/attach and pods/portforward are served over WebSocket"
                )
            self._authorize_stream(user, target, websocket=True)
            session = self.pod_streams.prepare(
                target, parse_qs(query_string), list(scope.get("subprotocols") or [])
            )
        except ApiError as error:
            await socket.refuse(error)
            return
        started = time.perf_counter()
        try:
            await session(socket)
        except Exception:
            log.exception("a %s session on %s failed", target.subresource, scope["path"])
        finally:
            await socket.close()
        log.debug("WEBSOCKET %s?%s %.1fms user=%s", scope["path"], query_string,
                  (time.perf_counter() - started) * 1000, user.name)  # fmt: skip

    def _authorize_stream(self, user: UserInfo, target: Target, *, websocket: bool) -> None:
        """pods/exec, attach and portforward need `create`; a WebSocket (a GET) needs `get` as well, as
        the API server checks it with AuthorizePodWebsocketUpgradeCreatePermission."""
        for verb in ("get", "create") if websocket else ("create",):
            attributes = RequestAttributes(
                verb, "", "pods", target.subresource or "", target.namespace or "", target.name or ""
            )
            if not self.authorizer.authorize(user, attributes):
                raise forbidden_error(user, attributes)

    def _identify(self, authorization: str | None, impersonating: impersonation.Headers) -> UserInfo:
        """Who a request acts as: its bearer token's user, or whom that user may impersonate."""
        user = self.authenticator.authenticate(authorization)
        if user is None:
            raise errors.unauthorized()
        return impersonation.act_as(user, impersonating, self.authorizer)

    # -- routing ----------------------------------------------------------------------------------------

    async def handle(self, request: Request) -> Reply | StreamReply:
        segments = [s for s in request.path.split("/") if s]
        head = segments[0] if segments else ""
        if head in _HEALTH:
            return Reply(200 if self.ready else 500, b"ok", "text/plain; charset=utf-8")
        if head == "version" and len(segments) == 1:
            return _json(_VERSION)
        request.user = self._identify(request.headers.get("authorization"), request.impersonation)
        if head == "openapi":
            self._require(request)
            return self._openapi(segments[1:])
        if head == "api" and len(segments) <= 2:
            self._require(request)
            return self._core_discovery(request, segments)
        if head == "apis" and len(segments) <= 3:
            self._require(request)
            return self._group_discovery(request, segments)
        if head in ("api", "apis"):
            target = self._route(segments)
            verb = request_verb(request.method, target, request.query)
            request.target, request.verb = target, verb
            attributes = RequestAttributes(
                verb,
                target.resource_type.group,
                target.resource_type.plural,
                target.subresource or "",
                target.namespace or "",
                target.name or "",
            )
            if not self.authorizer.authorize(request.user, attributes):
                raise forbidden_error(request.user, attributes)
            if self.faults is not None:
                self.faults.check(target, verb)
            if target.subresource in podstreams.SUBRESOURCES and target.resource_type.plural == "pods":
                self._authorize_stream(request.user, target, websocket=False)
                query = {key: [value] for key, value in request.query.items()}
                self.pod_streams.prepare(target, query, [])
                raise podstreams.PodStreams.refuse_upgrade(target)
            if target.resource_type.virtual:
                return self._review(request, target)
            return await self._resource(request, target, verb)
        raise errors.page_not_found()

    async def _proxy(self, request: Request, target: proxy.ProxyTarget, query: str) -> Reply:
        """services/proxy and pods/proxy: authorized like any subresource, then forwarded."""
        assert self.pod_proxy is not None
        request.user = self._identify(request.headers.get("authorization"), request.impersonation)
        verb = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}.get(
            request.method, "delete"
        )
        attributes = RequestAttributes(verb, "", target.kind, "proxy", target.namespace, target.name)
        if not self.authorizer.authorize(request.user, attributes):
            raise forbidden_error(request.user, attributes)
        # As the API server, the impersonation headers are spent here and not passed on.
        passed_on = {k: v for k, v in request.headers.items() if not k.startswith("impersonate-")}
        status, headers, body = await self.pod_proxy.forward(
            target, request.method, query, passed_on, request.body
        )
        content_type = next(
            (v for k, v in headers if k.lower() == "content-type"), "application/octet-stream"
        )
        return Reply(status, body, content_type)

    def _require(self, request: Request) -> None:
        assert request.user is not None
        attributes = RequestAttributes(request.method.lower(), "", "", path=request.path)
        if not self.authorizer.authorize(request.user, attributes):
            raise forbidden_error(request.user, attributes)

    def _route(self, segments: list[str]) -> Target:
        if segments[0] == "api":
            if segments[1] != "v1":
                raise errors.page_not_found()
            group, version, rest = "", "v1", segments[2:]
        else:
            group, version, rest = segments[1], segments[2], segments[3:]
        namespace = None
        namespace_subresource = group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")
        if rest[0] == "namespaces" and len(rest) >= 3 and not namespace_subresource:
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise errors.page_not_found()
        resource_type = self.registry.get(group, version, rest[0])
        if resource_type is None or (namespace is not None and not resource_type.namespaced):
            raise errors.page_not_found()
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        if subresource is not None and subresource not in resource_type.subresources:
            raise errors.page_not_found()
        return Target(resource_type, namespace, name, subresource)

    # -- discovery and OpenAPI --------------------------------------------------------------------------

    def _core_discovery(self, request: Request, segments: list[str]) -> Reply:
        if len(segments) == 1:
            if wants_aggregated(request.headers.get("accept", "")):
                return Reply(200, self.discovery.aggregated(core=True), AGGREGATED_CONTENT_TYPE)
            return Reply(200, self.discovery.api_versions())
        document = self.discovery.resource_list("", segments[1])
        if document is None:
            raise errors.page_not_found()
        return Reply(200, document)

    def _group_discovery(self, request: Request, segments: list[str]) -> Reply:
        if len(segments) == 1:
            if wants_aggregated(request.headers.get("accept", "")):
                return Reply(200, self.discovery.aggregated(core=False), AGGREGATED_CONTENT_TYPE)
            return Reply(200, self.discovery.group_list())
        document = (
            self.discovery.group(segments[1])
            if len(segments) == 2
            else self.discovery.resource_list(segments[1], segments[2])
        )
        if document is None:
            raise errors.page_not_found()
        return Reply(200, document)

    def _openapi(self, segments: list[str]) -> Reply:
        if segments == ["v2"]:
            # An empty protobuf document: kubectl's client-side validation then has no schema to check.
            return Reply(200, b"", "application/octet-stream")
        if segments == ["v3"]:
            return Reply(200, self.openapi.index())
        if segments and segments[0] == "v3":
            document = self.openapi.document("/".join(segments[1:]))
            if document is not None:
                return Reply(200, document)
        raise errors.page_not_found()

    # -- resources --------------------------------------------------------------------------------------

    async def _resource(self, request: Request, target: Target, verb: str) -> Reply | StreamReply:
        resource_type, namespace, name, sub = (
            target.resource_type,
            target.namespace,
            target.name,
            target.subresource,
        )
        resources = self.resources
        query = request.query
        applying = request.headers.get("content-type", "").split(";")[0].strip() == APPLY
        if "fieldManager" not in query and request.method in ("POST", "PUT", "PATCH") and not applying:
            # The real server names an unnamed writer by its user agent's program name; an applier must name
            # itself (refused in patch).
            query["fieldManager"] = request.headers.get("user-agent", "unknown").split("/")[0][:128]
        options = {
            "POST": "CreateOptions",
            "PUT": "UpdateOptions",
            "PATCH": "PatchOptions",
            "DELETE": "DeleteOptions",
        }
        if query.get("fieldValidation", "") not in ("", "Ignore", "Strict", "Warn") and request.method in (
            "POST",
            "PUT",
            "PATCH",
        ):
            raise errors.invalid_option(
                options[request.method], "fieldValidation", "FieldValueNotSupported",
                f'Unsupported value: "{query["fieldValidation"]}": supported values: "", "Ignore", "Strict", "Warn"',
            )  # fmt: skip
        if query.get("dryRun", "All") != "All" and request.method in options:
            raise errors.invalid_option(
                options[request.method], "dryRun", "FieldValueNotSupported",
                f'Unsupported value: ["{query["dryRun"]}"]: supported values: "All"',
            )  # fmt: skip
        handler = subresources.HANDLERS.get(sub or "")
        if handler is not None:
            call = subresources.Call(
                resources,
                self.authenticator,
                self.pod_logs,
                request.method,
                target,
                request.body,
                request.headers.get("content-type", JSON),
                query,
            )
            return _json_or_text(handler(call))
        if verb in ("list", "watch"):
            return self._list(request, resource_type, namespace, verb)
        if verb == "get":
            assert name is not None
            return self._object_reply(request, resource_type, resources.get(resource_type, namespace, name))
        if verb in _WRITES:
            if verb == "create" and resource_type.namespaced and namespace is None:
                raise errors.page_not_found()
            warnings: list[str] = []
            with recorded_warnings.recording() as admission_warnings:
                if self.webhooks.applies_to(resource_type, sub):
                    code, written = await self._admitted_write(request, target, verb, warnings)
                else:
                    code, written = self._write(request, target, verb, query)
            warnings += admission_warnings
            reply = self._object_reply(request, resource_type, written, code)
            return replace(reply, warnings=tuple(warnings)) if warnings else reply
        if self.webhooks.applies_to(resource_type, None):
            deleted_items = await self._admitted_delete_collection(request, target)
        else:
            options = _decode(request) if request.body else {}
            deleted_items = resources.delete_collection(resource_type, namespace, options, query)
        return _json(
            {
                "kind": resource_type.list_kind,
                "apiVersion": resource_type.api_version,
                "metadata": {},
                "items": deleted_items,
            }
        )

    def _write(self, request: Request, target: Target, verb: str, query: Query) -> tuple[int, dict[str, Any]]:
        """Runs one write verb: (HTTP code, the object written)."""
        resources, resource_type, namespace = self.resources, target.resource_type, target.namespace
        name, sub = target.name or "", target.subresource
        if verb == "create":
            return 201, resources.create(resource_type, namespace, _decode(request), query)
        if verb == "update":
            return 200, resources.update(resource_type, namespace, name, _decode(request), sub, query)
        if verb == "patch":
            content_type = request.headers.get("content-type", "").split(";")[0].strip()
            if content_type not in PATCH_TYPES:
                raise errors.unsupported_media_type(list(PATCH_TYPES))
            return resources.patch(resource_type, namespace, name, request.body, content_type, sub, query)
        options = _decode(request) if request.body else {}
        return resources.delete(resource_type, namespace, name, options, query)

    def _write_object(
        self, target: Target, creating: bool, obj: dict[str, Any], query: Query
    ) -> dict[str, Any]:
        """Creates or replaces with an object admission produced (a copy of it: the verbs change theirs)."""
        if creating:
            return self.resources.create(target.resource_type, target.namespace, clone(obj), query)
        name = obj["metadata"]["name"]
        return self.resources.update(
            target.resource_type, target.namespace, name, clone(obj), target.subresource, query
        )

    async def _admitted_write(
        self, request: Request, target: Target, verb: str, warnings: list[str]
    ) -> tuple[int, dict[str, Any]]:
        """A write that admission webhooks see: the verb is first run as a dry run to get the object it
        would store; mutating webhooks may change it (then it is written as a create or an update of
        their result), validating webhooks may refuse it; it is then written for real, provided nothing
        changed the stored object while the webhooks were called (otherwise all of it is done again,
        as kube-apiserver retries its guaranteed update). The webhooks' warnings are left in `warnings`."""
        resources, resource_type, namespace = self.resources, target.resource_type, target.namespace
        name, sub = target.name or "", target.subresource
        query = request.query
        dry_run = is_dry_run(query)
        assert request.user is not None
        for _ in range(_ADMISSION_ATTEMPTS):
            old = resources.store.get(resource_type.key(namespace, name)) if name else None
            if verb == "delete":
                if old is None:
                    raise errors.not_found(resource_type.plural, resource_type.group, name)
                attributes = webhooks.Attributes(
                    "DELETE", resource_type, sub or "", namespace, name, None, resources.output(resource_type, clone(old)),
                    request.user, dry_run, _decode(request) if request.body else {},
                )  # fmt: skip
                await self.webhooks.validate(attributes)
                if resources.store.get(resource_type.key(namespace, name)) == old:
                    warnings[:] = attributes.warnings
                    return self._write(request, target, verb, query)
                continue
            code, candidate = self._write(request, target, verb, {**query, "dryRun": "All"})
            attributes = webhooks.Attributes(
                "CREATE" if old is None else "UPDATE", resource_type, sub or "", namespace,
                candidate["metadata"]["name"], clone(candidate),
                None if old is None else resources.output(resource_type, clone(old)), request.user, dry_run,
            )  # fmt: skip
            mutated = await self.webhooks.mutate(attributes) or candidate
            final: dict[str, Any] | None = None
            if mutated != candidate:
                # What a mutating webhook changed is admitted again (schema, defaults, metadata rules)
                # and written as a create or a replace of exactly what was admitted.
                final = mutated
                if old is not None:
                    final["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
                candidate = self._write_object(target, old is None, final, {**query, "dryRun": "All"})
            attributes.obj = clone(candidate)
            await self.webhooks.validate(attributes)
            warnings[:] = attributes.warnings
            if dry_run:
                return code, candidate
            if resources.store.get(resource_type.key(namespace, name)) != old:
                continue
            if final is None:
                return self._write(request, target, verb, query)
            return code, self._write_object(target, old is None, final, query)
        raise errors.conflict(
            resource_type.plural,
            resource_type.group,
            name,
            "the object kept changing while admission webhooks were called",
        )

    async def _admitted_delete_collection(self, request: Request, target: Target) -> list[dict[str, Any]]:
        """deletecollection as kube-apiserver runs it: a delete of each selected object, each admitted (a
        refusal stops the collection there, with what was deleted before it gone)."""
        query = {k: v for k, v in request.query.items() if k != "limit"}
        objects, _ = self.resources.list_objects(target.resource_type, target.namespace, query)
        deleted = []
        for obj in objects:
            metadata = obj["metadata"]
            item = Target(target.resource_type, metadata.get("namespace"), metadata["name"], None)
            try:
                deleted.append((await self._admitted_write(request, item, "delete", []))[1])
            except ApiError as error:
                if error.code != 404:
                    raise
        return deleted

    def _object_reply(
        self, request: Request, resource_type: ResourceType, obj: dict[str, Any], status: int = 200
    ) -> Reply:
        accept = request.headers.get("accept", "")
        if "as=Table" in accept:
            include = request.query.get("includeObject", "Metadata")
            meta = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
            return _json(table(resource_type, [obj], meta, include), status)
        if "as=PartialObjectMetadata" in accept:
            return _json(
                {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.get("metadata", {}),
                },
                status,
            )
        return _json(obj, status)

    def _list(
        self, request: Request, resource_type: ResourceType, namespace: str | None, verb: str
    ) -> Reply | StreamReply:
        accept = request.headers.get("accept", "")
        include = request.query.get("includeObject", "Metadata") if "as=Table" in accept else None
        if verb == "watch":
            try:
                label_match = label_matcher(request.query.get("labelSelector"))
                field_match = field_matcher(request.query.get("fieldSelector"))
            except SelectorError as exc:
                raise errors.bad_request(str(exc)) from exc
            matchers = [m for m in (label_match, field_match) if m is not None]
            matches = None if not matchers else (lambda obj: all(m(obj) for m in matchers))
            return StreamReply(
                stream(self.resources, resource_type, namespace, request.query, matches, include)
            )
        objects, metadata = self.resources.list_objects(resource_type, namespace, request.query)
        if include is not None:
            return _json(table(resource_type, objects, metadata, include))
        if "as=PartialObjectMetadataList" in accept:
            items = [
                {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}
                for o in objects
            ]
            return _json(
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": metadata,
                    "items": items,
                }
            )
        return _json(
            {
                "kind": resource_type.list_kind,
                "apiVersion": resource_type.api_version,
                "metadata": metadata,
                "items": objects,
            }
        )

    def _review(self, request: Request, target: Target) -> Reply:
        if request.method != "POST" or target.name is not None:
            raise errors.method_not_allowed()
        assert request.user is not None
        return _json(self.reviews.create(request.user, target.resource_type, _decode(request)), 201)


def _json_or_text(result: tuple[int, Any]) -> Reply | StreamReply:
    code, body = result
    if isinstance(body, str):
        return Reply(code, body.encode(), "text/plain")
    if isinstance(body, AsyncIterator):
        return StreamReply(body, "text/plain")
    return _json(body, code)


def _warning(text: str) -> bytes:
    """A `Warning` header value as kube-apiserver writes it: code 299, no agent, the text quoted."""
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{quoted}"'.encode()


def _decode(request: Request) -> dict[str, Any]:
    return bodies.decode(request.body, request.headers.get("content-type", JSON))


class _ClientGone(Exception):
    """The client went away before its request's body was whole."""


async def _read_body(receive: Receive, limit: int | None) -> bytes | None:
    """The request's body, or None once it grows past `limit` (the rest is not read). A request whose client
    went before sending all of it is not carried out (`_ClientGone`), as kube-apiserver fails to read it: a
    DELETE cut short of its options must not run as one without them."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _send_stream(reply: StreamReply, receive: Receive, send: Send) -> None:
    """Sends a streaming body until it ends or the client goes away, whichever is first."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", reply.content_type.encode()),
                (b"cache-control", b"no-cache, private"),
            ],
        }
    )

    async def pump() -> None:
        async for chunk in reply.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    pumping = asyncio.ensure_future(pump())
    watching = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({pumping, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pumping, watching):
            task.cancel()
        await asyncio.gather(pumping, watching, return_exceptions=True)
        aclose = getattr(reply.chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    if pumping.done() and not pumping.cancelled():
        failure = pumping.exception()
        if failure is not None:
            log.error("a streaming reply failed", exc_info=failure)
        else:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
