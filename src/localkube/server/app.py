"""The ASGI application: the wiring of the server's parts and the filters every request passes.

A plain ASGI callable with a small hand-written router, to keep per-request overhead low. A request is
routed by its path into one of: health and version, discovery, OpenAPI, or a resource request
(`/api/v1/...` and `/apis/<group>/<version>/...`, optionally under `namespaces/<ns>/`, with a name and a
subresource). Resource requests are authenticated (bearer token; none or a wrong one is a 401), take on
the identity they impersonate (see impersonation.py), are authorized (the admin always; anyone else by
RBAC), then handed to `Resources`: writes through `admitted.py` (the admission webhooks' retry loop), the
answer in the form `negotiation.py` picks (JSON, a Table, metadata only) or as a watch stream; `asgi.py`
reads bodies and sends replies. Every refusal is an `ApiError` answered with its `Status`. As on a real
API server, a body over 3 MiB is a 413 (read no further) and an object over the store's limit (etcd's
1.5 MiB) a 500 in etcd's words. One line per request is logged at debug level."""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import replace
from functools import partial
from urllib.parse import parse_qs, parse_qsl

from kubesemantics.selectors import SelectorError, field_matcher, label_matcher
from kubesemantics.status import status_body
from localkube import __version__
from localkube.server import (
    asgi,
    binding,
    errors,
    impersonation,
    listoptions,
    podstreams,
    proxy,
    spdyupgrade,
    subresources,
    webhooks,
)
from localkube.server import warnings as recorded_warnings
from localkube.server.admitted import Writes
from localkube.server.audit import RESPONSE_COMPLETE, RESPONSE_STARTED, AuditLog
from localkube.server.auth import Authenticator
from localkube.server.discovery import AGGREGATED_CONTENT_TYPE, Discovery, wants_aggregated
from localkube.server.errors import ApiError
from localkube.server.faults import Faults
from localkube.server.negotiation import (
    decode,
    json_or_text,
    json_reply,
    list_reply,
    object_reply,
    table_include,
    typed_items,
)
from localkube.server.openapi import OpenApi
from localkube.server.patching import APPLY
from localkube.server.rbac import Authorizer, RequestAttributes, UserInfo, forbidden_error
from localkube.server.registry import ResourceType
from localkube.server.rest import Resources
from localkube.server.rest.common import is_dry_run
from localkube.server.rest.delete import deletion_reply
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
from localkube.server.streams import Socket, WebSocket
from localkube.server.watch import stream
from localkube.storage import SpaceExceeded, TooLarge

log = logging.getLogger("localkube.server")

_HEALTH = frozenset({"livez", "readyz", "healthz"})
_WRITES = frozenset({"create", "update", "patch", "delete"})
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


def _error_reply(error: ApiError) -> Reply:
    return json_reply(error.status(), error.code)


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
        self.writes = Writes(resources, self.webhooks)
        self.binder = binding.Binder(resources, self.webhooks)
        self.ready = True

    # -- ASGI -------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await asgi.lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        upgrade = spdyupgrade.requested(scope)
        if upgrade is not None and podstreams.is_stream_path(scope["path"]):
            await self._spdy(scope, upgrade, send)
            return
        started = time.perf_counter()
        proxy_target = proxy.parse(scope["path"]) if self.pod_proxy is not None else None
        # What the proxy passes on to a pod is not the API server's to limit; API requests are.
        limit = None if proxy_target is not None else errors.MAX_REQUEST_BODY_BYTES
        try:
            body = await asgi.read_body(receive, limit)
        except asgi.ClientGone:
            log.warning(
                "dropped %s %s: the client went before its body was whole", scope["method"], scope["path"]
            )
            return
        request = Request(
            scope["method"],
            scope["path"],
            dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)),
            asgi.headers_of(scope),
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
                # Nothing leaves before what it shows is durable (the store commits after each loop turn).
                await self.resources.store.settled()
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
            await asgi.send_stream(reply, receive, send)
            status = 200
        else:
            await asgi.send_reply(reply, send)
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
        headers = asgi.headers_of(scope)
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
            self._authorize_stream(user, target, ("get", "create"))
            session = self.pod_streams.prepare(
                target, parse_qs(query_string), list(scope.get("subprotocols") or [])
            )
        except ApiError as error:
            await socket.refuse(error)
            return
        await self._run_session(session, socket, scope, target, user)

    async def _spdy(self, scope: Scope, upgrade: spdyupgrade.SpdyUpgrade, send: Send) -> None:
        """A request to switch to SPDY/3.1 for pods/exec, attach or portforward (see podstreams.py),
        checked as the API server and the kubelet check it; a refusal is an ordinary answer with a Status
        (and the connection closes after it)."""
        headers = asgi.headers_of(scope)
        try:
            user = self._identify(headers.get("authorization"), impersonation.requested(scope["headers"]))
            target = self._route([s for s in scope["path"].split("/") if s])
            self._authorize_stream(user, target, (request_verb(scope["method"], target, {}), "create"))
            offered = spdyupgrade.offered(scope["headers"])
            handshake = partial(spdyupgrade.handshake, offered, header_count=len(scope["headers"]))
            query = parse_qs(scope["query_string"].decode("latin-1"))
            session = self.pod_streams.prepare(target, query, [], handshake)
        except ApiError as error:
            await asgi.send_reply(_error_reply(error), send)
            return
        await self._run_session(session, upgrade, scope, target, user)

    async def _run_session(
        self, session: podstreams.Session, socket: Socket, scope: Scope, target: Target, user: UserInfo
    ) -> None:
        started = time.perf_counter()
        try:
            await session(socket)
        except Exception:
            log.exception("a %s session on %s failed", target.subresource, scope["path"])
        finally:
            await socket.close()
        log.debug("STREAM %s?%s %.1fms user=%s", scope["path"], scope["query_string"].decode("latin-1"),
                  (time.perf_counter() - started) * 1000, user.name)  # fmt: skip

    def _authorize_stream(self, user: UserInfo, target: Target, verbs: tuple[str, ...]) -> None:
        """pods/exec, attach and portforward need `create`; a WebSocket (a GET) needs `get` as well, as
        the API server checks it with AuthorizePodWebsocketUpgradeCreatePermission."""
        for verb in verbs:
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
            return json_reply(_VERSION)
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
        if head == "apis" and not self.registry.resources(segments[1], segments[2]):
            # No handler serves a group version nobody registered: the mux's own plain 404 answers.
            return Reply(404, b"404 page not found\n", "text/plain; charset=utf-8")
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
                self._authorize_stream(request.user, target, ("create",))
                query = {key: [value] for key, value in request.query.items()}
                self.pod_streams.prepare(target, query, [])
                raise podstreams.not_upgraded(target)
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
        if sub == binding.SUBRESOURCE and resource_type.plural == "pods" and not resource_type.group:
            assert name is not None and request.user is not None
            if request.method != "POST":
                raise errors.method_not_allowed()
            await self.binder.create(
                resource_type, namespace, name, decode(request), request.user, is_dry_run(query)
            )
            return json_reply(status_body(201, success=True), 201)
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
            return json_or_text(handler(call))
        if verb in ("list", "watch", "deletecollection"):
            listoptions.check(resource_type, query, watch=verb == "watch")
        if verb in ("list", "watch"):
            return self._list(request, resource_type, namespace, verb)
        if verb == "get":
            assert name is not None
            return object_reply(request, resource_type, resources.get(resource_type, namespace, name))
        if verb in _WRITES:
            if verb == "create" and resource_type.namespaced and namespace is None:
                raise errors.page_not_found()
            warnings: list[str] = []
            with recorded_warnings.recording() as admission_warnings:
                if self.webhooks.applies_to(resource_type, sub):
                    code, written = await self.writes.admitted(request, target, verb, warnings)
                else:
                    code, written = self.writes.run(request, target, verb, query)
            warnings += admission_warnings
            if verb == "delete":
                written = deletion_reply(resource_type, code, written)
            reply = object_reply(request, resource_type, written, code)
            return replace(reply, warnings=tuple(warnings)) if warnings else reply
        if self.webhooks.applies_to(resource_type, None):
            deleted_items = await self.writes.admitted_delete_collection(request, target)
        else:
            options = decode(request) if request.body else {}
            deleted_items = resources.delete_collection(resource_type, namespace, options, query)
        return json_reply(
            {
                "kind": resource_type.list_kind,
                "apiVersion": resource_type.api_version,
                "metadata": {
                    "resourceVersion": str(resources.store.revision),
                    **({"continue": ""} if resource_type.custom else {}),
                },
                "items": typed_items(resource_type, deleted_items),
            }
        )

    def _list(
        self, request: Request, resource_type: ResourceType, namespace: str | None, verb: str
    ) -> Reply | StreamReply:
        if verb == "watch":
            try:
                label_match = label_matcher(request.query.get("labelSelector"))
                field_match = field_matcher(request.query.get("fieldSelector"))
            except SelectorError as exc:
                raise errors.bad_request(str(exc)) from exc
            matchers = [m for m in (label_match, field_match) if m is not None]
            matches = None if not matchers else (lambda obj: all(m(obj) for m in matchers))
            include = table_include(request)
            return StreamReply(
                stream(self.resources, resource_type, namespace, request.query, matches, include)
            )
        objects, metadata = self.resources.list_objects(resource_type, namespace, request.query)
        return list_reply(request, resource_type, objects, metadata)

    def _review(self, request: Request, target: Target) -> Reply:
        if request.method != "POST" or target.name is not None:
            raise errors.method_not_allowed()
        assert request.user is not None
        return json_reply(self.reviews.create(request.user, target.resource_type, decode(request)), 201)
