"""The History Server under attack: every route the app declares (so a new one is drilled without a word
here), with hostile values in each path parameter, in each query parameter the server's code reads, and in
each session cookie (`..`, encoded and double-encoded separators, absolute paths, NUL, backslashes, very
long values: hostile_http.py), then oversized and malformed query strings, then requests without a token,
with a wrong one and with a wrong cookie (the token is on).

The server is built as `kuberay-history-server` builds it, over a local directory with a root prefix
(`STORAGE_ROOT_DIR`) and a dashboard build; a secret is planted beside the directory, beside the root
prefix inside it and beside the dashboard build. Invariants: no answer is a 5xx or a hang, no body carries
the secret, every 4xx says why, every request without the token is refused. The counts are printed.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import kuberay.history.server as server_package
from kuberay.history import layout
from kuberay.history.backends import from_env
from kuberay.history.server import app as history_app
from kuberay.history.server.app import HistoryApp
from kuberay.history.server.auth import COOKIE, OPEN_PATHS, OPEN_PREFIXES, Token
from kuberay.history.server.cache import ByteCache
from kuberay.history.server.catalog import Catalog
from kuberay.history.storage import STORAGE_BACKEND, STORAGE_LOCAL_DIR, STORAGE_ROOT_DIR, LocalDirectory
from reliability.hostile_http import (
    Tally,
    Target,
    call,
    hostile_values,
    malformed_queries,
    read_query_names,
    targets,
)

ROOT = "ray-history"
TOKEN = "drill-token"
SESSION = "session_2026-03-01_00-00-00_000001_1"
CLUSTER = layout.ClusterRef("team-a", "train-abc12", "rayjob", "train")
NODE, WORKER, ACTOR, JOB = "ab" * 28, "w1", "a1", "02000000"
# A valid value of each path parameter, so that each is attacked on its own.
VALID = {"namespace": "team-a", "kind": "rayjob", "name": "train", "session": SESSION, "job_id": JOB,
         "node_id": NODE, "actor_id": ACTOR, "media_type": "file", "rest": "serve/applications/",
         "path": "app.js"}  # fmt: skip
COOKIES = {history_app.COOKIE_CLUSTER_NAME: CLUSTER.name, history_app.COOKIE_CLUSTER_NAMESPACE: CLUSTER.namespace,
           history_app.COOKIE_SESSION_NAME: SESSION, history_app.COOKIE_OWNER_KIND: CLUSTER.kind,
           history_app.COOKIE_OWNER_NAME: CLUSTER.owner_name}  # fmt: skip


def _store(bucket: Path) -> None:
    """A RayJob's session with the answers and log files each way of naming a log reaches."""
    storage = LocalDirectory(bucket)
    storage.put(CLUSTER.metadata_key(ROOT, SESSION), b"{}")
    answers = {
        "/api/jobs/": [{"job_id": JOB, "submission_id": "sub1", "driver_node_id": NODE}],
        "/nodes": {"data": {"summary": [{"ip": "10.0.0.5", "raylet": {"nodeId": NODE}}]}},
        "/logical/actors": {"data": {"actors": {ACTOR: {"address": {"nodeId": NODE, "workerId": WORKER}}}}},
        "/api/v0/actors": {"data": {"result": {"result": [{"actor_id": ACTOR, "node_id": NODE, "pid": 7}]}}},
        "/api/v0/tasks": {"data": {"result": {"result": [{"task_id": "t1", "job_id": JOB, "node_id": NODE,
                          "task_log_info": {"stdout_file": f"worker-{WORKER}-{JOB}-7.out", "stdout_start": 0,
                                            "stdout_end": 5}}]}}},
    }  # fmt: skip
    for path, body in answers.items():
        storage.put(
            f"{CLUSTER.endpoints_dir(ROOT, SESSION)}/{layout.endpoint_key(path)}", json.dumps(body).encode()
        )
    logs = CLUSTER.logs_dir(ROOT, SESSION, NODE)
    for name in ("raylet.out", f"worker-{WORKER}-{JOB}-7.out", "job-driver-sub1.log"):
        storage.put(f"{logs}/{name}", b"line\n" * 10)


def _headers(cookies: dict[str, str] = COOKIES, token: str = TOKEN) -> list[tuple[str, str]]:
    return [
        ("authorization", f"Bearer {token}"),
        ("cookie", "; ".join(f"{k}={v}" for k, v in cookies.items())),
    ]


def _open(target: Target) -> bool:
    return target.path in OPEN_PATHS or target.path.startswith(tuple(p.rstrip("/") for p in OPEN_PREFIXES))


async def test_the_history_server_under_attack(tmp_path: Path) -> None:
    secret = f"SECRET-{uuid.uuid4().hex}".encode()
    bucket, dashboard = tmp_path / "bucket", tmp_path / "dashboard"
    _store(bucket)
    (dashboard / "static").mkdir(parents=True)
    (dashboard / "index.html").write_text("<html></html>")
    (dashboard / "static" / "app.js").write_text("app")
    for beside in (tmp_path / "secret.txt", bucket / "secret.txt", bucket / "cluster-history" / "secret.txt"):
        beside.parent.mkdir(parents=True, exist_ok=True)
        beside.write_bytes(secret)
    storage = from_env({STORAGE_BACKEND: "local", STORAGE_LOCAL_DIR: str(bucket), STORAGE_ROOT_DIR: ROOT})
    app = HistoryApp(Catalog(storage, ROOT, ByteCache(16 << 20)), Token(TOKEN), dashboard).build()
    entered = await call(app, "GET", "/enter_cluster/team-a/rayjob/train", _headers({}))
    assert entered is not None and entered.status == 200, entered

    tally = Tally("History Server hostile input", [secret])
    # From the dashboard build's static/ (2) and the session's endpoints (8, 9) and logs (9, 10) directories
    # to the planted secrets.
    values = hostile_values(str(tmp_path / "secret.txt"), (2, 8, 9, 10))
    query_names = read_query_names(Path(server_package.__file__).parent.glob("*.py"))
    assert {"node_id", "filename", "actor_id", "task_id", "glob"} <= set(query_names), query_names
    try:
        for target in targets(app.routes):
            for method in target.methods:
                await _drill(app, tally, target, method, values, query_names)
    finally:
        tally.report()
    tally.assert_clean()


async def _drill(
    app: Any, tally: Tally, target: Target, method: str, values: list[tuple[str, str]], query_names: list[str]
) -> None:
    route = f"{method} {target.path}"
    base = {p: VALID.get(p, "x") for p in target.params}  # a parameter new to the drill is attacked too

    async def check(what: str, url: str, headers: list[tuple[str, str]], *, refused: bool = False) -> None:
        tally.check(route, what, await call(app, method, url, headers), refused=refused)

    for param in target.params:  # each path parameter
        for label, value in values:
            url = target.url(base | {param: value})
            await check(f"{param}={label} ({url[:200]})", url, _headers())
    for name in query_names:  # each query parameter the server reads, with what it needs to be read
        others = _needed(name)
        for label, value in values:
            await check(f"?{name}={label}", f"{target.url(base)}?{name}={value}{others}", _headers())
    for label, query in malformed_queries(query_names):
        await check(f"query: {label}", f"{target.url(base)}?{query}", _headers())
    for cookie in COOKIES:  # each cookie that names the session
        for label, value in values:
            await check(f"cookie {cookie}={label}", target.url(base), _headers(COOKIES | {cookie: value}))
    for label, headers in _wrong_tokens():
        await check(f"auth: {label}", target.url(base), headers, refused=not _open(target))


def _needed(name: str) -> str:
    """The other parameters a log request needs to get as far as reading `name`: a node for a way of
    naming a log (Ray's order: a file by name wins), a node and a file for the rest (download_filename,
    lines, suffix, ...), so that the answer is made."""
    if name in ("node_id", "node_ip"):
        return "&filename=raylet.out"
    if name in ("filename", "actor_id", "task_id", "pid", "submission_id"):
        return f"&node_id={NODE}"
    return f"&node_id={NODE}&filename=raylet.out"


def _wrong_tokens() -> list[tuple[str, list[tuple[str, str]]]]:
    cookies = "; ".join(f"{k}={v}" for k, v in COOKIES.items())
    return [
        ("no token", [("cookie", cookies)]),
        ("wrong token", _headers(token="wrong")),
        ("empty bearer", [("authorization", "Bearer "), ("cookie", cookies)]),
        ("token with a NUL", [("authorization", f"Bearer {TOKEN}\x00"), ("cookie", cookies)]),
        ("very long token", _headers(token="t" * 65536)),
        ("token's prefix", _headers(token=TOKEN[:-1])),
        ("wrong X-Ray-Authorization", [("x-ray-authorization", "Bearer wrong"), ("cookie", cookies)]),
        ("wrong cookie", [("cookie", f"{cookies}; {COOKIE}=wrong")]),
    ]
