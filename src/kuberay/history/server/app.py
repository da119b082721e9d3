"""The server's routes: upstream's History Server routes, which are the Ray dashboard's, answered from
storage for the session the client entered.

`/clusters` lists stored sessions; `/enter_cluster/{namespace}/{kind}/{name}[/{session}]` picks one and
remembers it in cookies (upstream's names, renewed by every request of the session, as upstream renews
them), so that Ray's frontend, which knows nothing of clusters, can then ask its usual relative URLs. A
request for a session-scoped route without those cookies gets 400 with the way to enter one. Answers are
the collector's stored snapshots, filtered per request (Ray's empty shapes where upstream has them for a
page the session never stored, `fallbacks`); logs come from the stored log files (`logfile`); our own
`/api/history/session_end` answers the session's end record and whether the session is complete. `/` and `/static/` serve Ray's own dashboard build (from the installed `ray`
package, or `--dashboard-dir`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kuberay.history import layout
from kuberay.history.server import clusterstatus, fallbacks, logs, stateapi
from kuberay.history.server.auth import COOKIE, Token, bearer
from kuberay.history.server.catalog import Catalog, StoredSession
from kuberay.history.server.logfile import LogFiles

COOKIE_CLUSTER_NAME = "cluster_name"
COOKIE_CLUSTER_NAMESPACE = "cluster_namespace"
COOKIE_SESSION_NAME = "session_name"
COOKIE_OWNER_KIND = "owner_kind"
COOKIE_OWNER_NAME = "owner_name"
COOKIE_MAX_AGE = 600
# Ours (upstream's server has no such route): the entered session's end record.
SESSION_END_ROUTE = "/api/history/session_end"

Handler = Callable[[Request, StoredSession], Awaitable[Response]]


def _set_cookies(response: Response, stored: StoredSession) -> None:
    """The session's cookies, upstream's names and lifetime (empty owner cookies for a plain RayCluster)."""
    owned = stored.cluster.kind != layout.RAYCLUSTER
    for cookie, value in (
        (COOKIE_CLUSTER_NAME, stored.cluster.name),
        (COOKIE_CLUSTER_NAMESPACE, stored.cluster.namespace),
        (COOKIE_SESSION_NAME, stored.session),
        (COOKIE_OWNER_KIND, stored.cluster.kind if owned else ""),
        (COOKIE_OWNER_NAME, stored.cluster.owner_name if owned else ""),
    ):
        response.set_cookie(cookie, value, max_age=COOKIE_MAX_AGE, path="/")


class HistoryApp:
    def __init__(self, catalog: Catalog, token: Token, dashboard_dir: Path | None) -> None:
        self.catalog = catalog
        self.token = token
        self.dashboard_dir = dashboard_dir
        self.logfiles = LogFiles(catalog)

    # Sessions and cookies.

    async def clusters(self, request: Request) -> Response:
        return JSONResponse([s.info() for s in await self.catalog.sessions()])

    async def enter_cluster(self, request: Request) -> Response:
        p = request.path_params
        kind = p["kind"].lower()
        if kind not in layout.KINDS:
            return PlainTextResponse(
                f"unsupported resource kind: {p['kind']!r} (must be raycluster, rayjob, or rayservice)", 400
            )
        session = p.get("session", "latest")
        stored = await self.catalog.find(p["namespace"], kind, p["name"], session)
        if stored is None:
            return PlainTextResponse(
                f"cluster {p['namespace']}/{kind}/{p['name']} with session {session} not found", 404
            )
        # `?redirect=true` (our addition, for a link a person opens): on to Ray's dashboard once entered.
        response: Response = JSONResponse(
            {
                "result": "success",
                "name": stored.cluster.name,
                "namespace": stored.cluster.namespace,
                "session": stored.session,
            }
        )
        if request.query_params.get("redirect") == "true":
            response = RedirectResponse("/", status_code=303)
        _set_cookies(response, stored)
        return response

    async def _entered(self, request: Request) -> StoredSession | None:
        c = request.cookies
        name, namespace, session = (
            c.get(COOKIE_CLUSTER_NAME),
            c.get(COOKIE_CLUSTER_NAMESPACE),
            c.get(COOKIE_SESSION_NAME),
        )
        if not (name and namespace and session):
            return None
        cluster = layout.ClusterRef(
            namespace, name, c.get(COOKIE_OWNER_KIND, ""), c.get(COOKIE_OWNER_NAME, "")
        ).normalized()  # cookies may spell the kind as Kubernetes does (`RayJob`)
        for stored in await self.catalog.sessions():
            if stored.cluster == cluster and stored.session == session:
                return stored
        return None

    def scoped(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def route(request: Request) -> Response:
            stored = await self._entered(request)
            if stored is None:
                return PlainTextResponse(
                    "no stored cluster session entered: open /enter_cluster/{namespace}/{kind}/{name}[/{session}] first",
                    400,
                )
            response = await handler(request, stored)
            # Upstream re-sets the cookies on every request of a session, so that a page left open keeps
            # its session for as long as it is used, not 10 minutes from entering.
            _set_cookies(response, stored)
            return response

        return route

    # Stored answers.

    async def _stored(self, stored: StoredSession, path: str) -> Any | None:
        return await self.catalog.endpoint_json(stored, path)

    def _missing(self, path: str) -> Response:
        return JSONResponse(stateapi.reply(None, f"{path} was not collected for this session", ok=False), 404)

    async def verbatim(self, request: Request, stored: StoredSession) -> Response:
        """Any other dashboard GET: the stored answer of that path, if the collector stored it."""
        raw = await self.catalog.endpoint(stored, request.url.path)
        if raw is None:
            empty = fallbacks.empty_answer(request.url.path)
            return self._missing(request.url.path) if empty is None else JSONResponse(empty)
        return Response(raw, media_type="application/json")

    async def session_end(self, request: Request, stored: StoredSession) -> Response:
        """Ours: how the session ended, as its head's collector recorded it, and whether it is `complete`
        (its final snapshot, taken while the dashboard was up, and its final upload both done): only then
        are the stored answers the cluster's last word (a job stored RUNNING may have finished)."""
        record = await self.catalog.session_end(stored)
        if record is None:
            return PlainTextResponse(
                "no end recorded for this session: it is still running, or its collector was stopped before "
                "its final snapshot",
                404,
            )
        snapshot = record.get("finalSnapshot")
        succeeded = isinstance(snapshot, dict) and snapshot.get("succeeded") is True
        return JSONResponse({**record, "complete": succeeded and record.get("finalUpload") == "done"})

    async def jobs(self, request: Request, stored: StoredSession) -> Response:
        found = await self._stored(stored, "/api/jobs/")
        return self._missing("/api/jobs/") if found is None else JSONResponse(found)

    async def job(self, request: Request, stored: StoredSession) -> Response:
        wanted = request.path_params["job_id"]
        for job in await self._stored(stored, "/api/jobs/") or []:
            if wanted in (job.get("job_id"), job.get("submission_id")):
                return JSONResponse(job)
        return PlainTextResponse(f"Job {wanted} does not exist", 404)

    async def nodes(self, request: Request, stored: StoredSession) -> Response:
        found = await self._stored(stored, "/nodes")
        if found is None:
            return self._missing("/nodes")
        if request.query_params.get("view") == "hostNameList":
            summary = (found.get("data") or {}).get("summary") or []
            hosts = [n.get("raylet", {}).get("nodeManagerHostname") or n.get("hostname") for n in summary]
            return JSONResponse(stateapi.reply(None) | {"data": {"hostNameList": [h for h in hosts if h]}})
        return JSONResponse(found)

    async def node(self, request: Request, stored: StoredSession) -> Response:
        wanted = request.path_params["node_id"]
        found = await self._stored(stored, "/nodes") or {}
        for node in (found.get("data") or {}).get("summary") or []:
            if (node.get("raylet") or {}).get("nodeId") == wanted:
                return JSONResponse(
                    {"result": True, "msg": "Node details fetched.", "data": {"detail": node}}
                )
        return PlainTextResponse(f"node {wanted} not found", 404)

    async def actor(self, request: Request, stored: StoredSession) -> Response:
        wanted = request.path_params["actor_id"]
        found = await self._stored(stored, "/logical/actors") or {}
        actors = (found.get("data") or {}).get("actors") or {}
        if wanted not in actors:
            return JSONResponse(stateapi.reply(None, f"Actor {wanted} not found", ok=False), 404)
        return JSONResponse({"result": True, "msg": "Actor fetched.", "data": {"detail": actors[wanted]}})

    async def events(self, request: Request, stored: StoredSession) -> Response:
        found = await self._stored(stored, "/events")
        if found is None:
            return self._missing("/events")
        job_id = request.query_params.get("job_id")
        if job_id:
            events = ((found.get("data") or {}).get("events") or {}).get(job_id, [])
            return JSONResponse(
                {"result": True, "msg": "Job events fetched.", "data": {"jobId": job_id, "events": events}}
            )
        return JSONResponse(found)

    async def _tasks(self, request: Request, stored: StoredSession) -> list[dict[str, Any]]:
        q = request.query_params
        tasks = stateapi.records(await self._stored(stored, "/api/v0/tasks"))
        return stateapi.filtered(
            tasks, q.getlist("filter_keys"), q.getlist("filter_predicates"), q.getlist("filter_values")
        )

    def state_list(self, path: str) -> Handler:
        async def route(request: Request, stored: StoredSession) -> Response:
            found = await self._stored(stored, path)
            if found is None:
                found = fallbacks.empty_answer(path)
                if found is None:
                    return self._missing(path)
            records = stateapi.records(found)
            if path == "/api/v0/placement_groups":
                records = [fallbacks.placement_group(r) for r in records]
            q = request.query_params
            try:
                items = stateapi.filtered(
                    records,
                    q.getlist("filter_keys"),
                    q.getlist("filter_predicates"),
                    q.getlist("filter_values"),
                )
                limit = int(q.get("limit", stateapi.DEFAULT_LIMIT))
            except ValueError as e:
                return JSONResponse(stateapi.reply(None, str(e), ok=False), 400)
            total = len(records)
            return JSONResponse(stateapi.reply(stateapi.list_result(items, total, limit)))

        return route

    async def task_summary(self, request: Request, stored: StoredSession) -> Response:
        try:
            tasks = await self._tasks(request, stored)
        except ValueError as e:
            return JSONResponse(stateapi.reply(None, str(e), ok=False), 400)
        return JSONResponse(stateapi.reply(stateapi.task_summary(tasks)))

    async def task_timeline(self, request: Request, stored: StoredSession) -> Response:
        tasks = stateapi.records(await self._stored(stored, "/api/v0/tasks"))
        job_id = request.query_params.get("job_id")
        if job_id:
            tasks = [t for t in tasks if t.get("job_id") == job_id]
        body = json.dumps(stateapi.timeline(tasks))
        if request.query_params.get("download") == "1":
            return Response(
                body,
                media_type="application/json",
                headers={"Content-Disposition": 'attachment; filename="timeline.json"'},
            )
        return Response(body, media_type="application/json")

    async def cluster_status(self, request: Request, stored: StoredSession) -> Response:
        """Ray's two forms: `format=1`, the text the frontend reads, is Ray's own when the collector stored
        it, else made from the stored `format=0` answer; anything else is the stored `format=0` answer."""
        format0 = await self._stored(stored, "/api/cluster_status")
        if request.query_params.get("format") != "1":
            return JSONResponse(clusterstatus.empty() if format0 is None else format0)
        text = await self.catalog.uri_json(stored, layout.FORMATTED_CLUSTER_STATUS)
        if isinstance(text, dict) and isinstance((text.get("data") or {}).get("clusterStatus"), str):
            return JSONResponse(text)
        return JSONResponse(clusterstatus.from_format0(format0))

    async def health_off(self, request: Request, stored: StoredSession) -> Response:
        """Grafana and Prometheus belonged to the live cluster: a stored session has neither."""
        return JSONResponse(stateapi.reply(None, "not available for a stored session", ok=False))

    # Logs.

    async def log_list(self, request: Request, stored: StoredSession) -> Response:
        node_id = request.query_params.get("node_id") or await self.logfiles.node_of_ip(
            stored, request.query_params.get("node_ip")
        )
        if not node_id:
            return JSONResponse(
                stateapi.reply(
                    None,
                    "Both node id and node ip are not provided. Please provide at least one of them.",
                    ok=False,
                ),
                400,
            )
        try:
            stored_files = await self.catalog.log_files(stored, node_id)
        except layout.LayoutError as e:  # a node id that is no directory name (`..`, a `/`)
            return JSONResponse(stateapi.reply(None, str(e), ok=False), 400)
        files = logs.matching(stored_files, request.query_params.get("glob", "*"))
        return JSONResponse(stateapi.reply(logs.categorize(files)))

    async def log_file(self, request: Request, stored: StoredSession) -> Response:
        return await self.logfiles.response(stored, request.query_params)

    # Auth, health and the frontend.

    async def authentication_mode(self, request: Request) -> Response:
        return JSONResponse({"authentication_mode": "token" if self.token.enabled else "disabled"})

    async def authenticate(self, request: Request) -> Response:
        if not self.token.enabled:
            return PlainTextResponse("Unauthorized: Token authentication is not enabled", 401)
        presented = bearer(request.headers.get("authorization", ""))
        if not self.token.valid(presented):
            return PlainTextResponse("Forbidden: Invalid authentication token", 403)
        response = JSONResponse({"status": "authenticated", "message": "Token is valid"})
        response.set_cookie(
            COOKIE,
            presented,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def ok(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def index(self, request: Request) -> Response:
        if self.dashboard_dir is None:
            return PlainTextResponse("Ray's dashboard frontend is not installed here: see /clusters", 404)
        return FileResponse(self.dashboard_dir / "index.html")

    def build(self) -> Starlette:
        s = self.scoped
        routes: list[Route | Mount] = [
            Route("/livez", self.ok),
            Route("/readz", self.ok),
            Route("/clusters", self.clusters),
            Route("/clusters/", self.clusters),
            Route("/enter_cluster/{namespace}/{kind}/{name}", self.enter_cluster),
            Route("/enter_cluster/{namespace}/{kind}/{name}/{session}", self.enter_cluster),
            Route("/api/authentication_mode", self.authentication_mode),
            Route("/api/authenticate", self.authenticate, methods=["POST"]),
            Route(SESSION_END_ROUTE, s(self.session_end)),
            Route("/api/jobs/", s(self.jobs)),
            Route("/api/jobs/{job_id}", s(self.job)),
            Route("/nodes", s(self.nodes)),
            Route("/nodes/{node_id}", s(self.node)),
            Route("/events", s(self.events)),
            Route("/logical/actors/{actor_id}", s(self.actor)),
            Route("/api/v0/tasks", s(self.state_list("/api/v0/tasks"))),
            Route("/api/v0/tasks/summarize", s(self.task_summary)),
            Route("/api/v0/tasks/timeline", s(self.task_timeline)),
            Route("/api/v0/actors", s(self.state_list("/api/v0/actors"))),
            Route("/api/v0/placement_groups", s(self.state_list("/api/v0/placement_groups"))),
            Route("/api/v0/logs", s(self.log_list)),
            Route("/api/v0/logs/{media_type}", s(self.log_file)),
            Route("/api/cluster_status", s(self.cluster_status)),
            Route("/api/grafana_health", s(self.health_off)),
            Route("/api/prometheus_health", s(self.health_off)),
            Route("/", self.index),
        ]
        if self.dashboard_dir is not None:
            routes.append(Mount("/static", StaticFiles(directory=self.dashboard_dir / "static")))
        # Whatever else the collector stored: cluster status and metadata, Serve, data sets, time zone, ...
        for prefix in ("/api/{rest:path}", "/logical/{rest:path}", "/timezone"):
            routes.append(Route(prefix, s(self.verbatim)))
        token = self.token

        async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            if not token.allows(request):
                return PlainTextResponse("Unauthorized: missing or invalid authentication token", 401)
            return await call_next(request)

        return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)])
