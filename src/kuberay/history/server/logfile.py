"""`/api/v0/logs/file` of a stored session, with the parameters Ray's log API takes.

A log is named as Ray names it: by `node_id` (or `node_ip`) and `filename`; by `actor_id` (the actor's
worker's `worker-<worker id>-*.out|err`, as the Actors and Serve replica pages ask); by `task_id` and
`attempt_number` (the task's byte range of its worker's file); by `pid` on a node; or by `submission_id`
(the job's driver log). `lines` is the last N lines (Ray's default 1000, also for `0`; -1 the whole file),
within a task's range too; `filter_ansi_code=true` strips the color codes Ray's frontend cannot draw.
Resolution reads the stored snapshots (actors, tasks, jobs, nodes); the bytes come from storage in
ranges, streamed.
"""

from __future__ import annotations

import asyncio
import re
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.datastructures import QueryParams
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from kuberay.history import layout
from kuberay.history.errors import HistoryServerError
from kuberay.history.server import logs, stateapi
from kuberay.history.server.catalog import Catalog, StoredSession
from kuberay.history.storage import StorageError, check_key

DEFAULT_LINES = 1000
# Ray's pattern (`state_head.py`): SGR color codes only, applied to the bytes.
ANSI = re.compile(rb"\x1b\[[0-9;]+m")
_UNFINISHED_ANSI = re.compile(rb"\x1b(\[[0-9;]*)?")


class LogError(HistoryServerError):
    """A log request that cannot be answered, with the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Options:
    node_id: str
    node_ip: str
    filename: str
    actor_id: str
    task_id: str
    submission_id: str
    pid: int | None
    attempt_number: int
    suffix: str
    lines: int
    filter_ansi_code: bool
    download_filename: str


def _int(q: QueryParams, name: str, default: int | None) -> int | None:
    raw = q.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError:
        raise LogError(400, f"{name}: {raw!r} is not a number") from None


def options(q: QueryParams) -> Options:
    suffix = q.get("suffix") or "out"
    if suffix not in ("out", "err"):
        raise LogError(400, f"invalid suffix parameter: {suffix} (must be 'out' or 'err')")
    lines = _int(q, "lines", DEFAULT_LINES)
    return Options(
        node_id=q.get("node_id", ""),
        node_ip=q.get("node_ip", ""),
        filename=q.get("filename", ""),
        actor_id=q.get("actor_id", ""),
        task_id=q.get("task_id", ""),
        submission_id=q.get("submission_id", ""),
        pid=_int(q, "pid", None),
        attempt_number=_int(q, "attempt_number", 0) or 0,
        suffix=suffix,
        lines=lines or DEFAULT_LINES,  # 0 means the default, as upstream reads it
        filter_ansi_code=q.get("filter_ansi_code", "").lower() == "true",  # Ray's reading
        download_filename=q.get("download_filename", ""),
    )


@dataclass(frozen=True)
class Located:
    node_id: str
    filename: str
    start: int = 0
    end: int = -1  # -1: to the end of the file


class LogFiles:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    async def node_of_ip(self, stored: StoredSession, ip: str | None) -> str | None:
        if not ip:
            return None
        found = await self.catalog.endpoint_json(stored, "/nodes") or {}
        for node in (found.get("data") or {}).get("summary") or []:
            if node.get("ip") == ip:
                return str((node.get("raylet") or {}).get("nodeId") or "") or None
        return None

    async def locate(self, stored: StoredSession, o: Options) -> Located:
        """Ray's order: a file by name, else an actor's, a task's, a pid's, a job driver's."""
        node_id = o.node_id or await self.node_of_ip(stored, o.node_ip) or ""
        if o.filename:
            if not node_id:
                raise LogError(400, "node_id (or node_ip) is required with filename")
            return Located(node_id, o.filename)
        if o.actor_id:
            return await self._actor(stored, o.actor_id, o.suffix)
        if o.task_id:
            return await self._task(stored, o.task_id, o.attempt_number, o.suffix)
        if o.pid is not None:
            if not node_id:
                raise LogError(400, "node_id (or node_ip) is required with pid")
            return await self._worker_file(stored, node_id, f"-{o.pid}.{o.suffix}", f"pid {o.pid}")
        if o.submission_id:
            return await self._driver(stored, o.submission_id)
        raise LogError(
            400,
            "one of filename (with node_id or node_ip), actor_id, task_id, pid or submission_id is required",
        )

    async def _worker_file(
        self, stored: StoredSession, node_id: str, ending: str, what: str, worker: str = ""
    ) -> Located:
        """The node's worker log `worker-<worker>…<ending>` (Ray's name: worker-<worker id>-<job id>-<pid>.<suffix>)."""
        prefix = f"worker-{worker}-" if worker else "worker-"
        for name in sorted(await self.catalog.log_files(stored, node_id)):
            if name.startswith(prefix) and name.endswith(ending):
                return Located(node_id, name)
        raise LogError(404, f"no worker log of {what} is stored for node {node_id}")

    async def _actor(self, stored: StoredSession, actor_id: str, suffix: str) -> Located:
        logical = await self.catalog.endpoint_json(stored, "/logical/actors") or {}
        actor = ((logical.get("data") or {}).get("actors") or {}).get(actor_id)
        if isinstance(actor, dict):
            address = actor.get("address") or {}
            node, worker = address.get("nodeId"), address.get("workerId")
            if node and worker:
                return await self._worker_file(
                    stored, str(node), f".{suffix}", f"actor {actor_id}", str(worker)
                )
        # The state API's record has the node and the pid, not the worker.
        for record in stateapi.records(await self.catalog.endpoint_json(stored, "/api/v0/actors")):
            if record.get("actor_id") == actor_id and record.get("node_id") and record.get("pid"):
                ending = f"-{record['pid']}.{suffix}"
                return await self._worker_file(stored, str(record["node_id"]), ending, f"actor {actor_id}")
        raise LogError(404, f"actor {actor_id} is not stored with a node and worker (never scheduled?)")

    async def _task(self, stored: StoredSession, task_id: str, attempt: int, suffix: str) -> Located:
        tasks = stateapi.records(await self.catalog.endpoint_json(stored, "/api/v0/tasks"))
        attempts = [t for t in tasks if t.get("task_id") == task_id]
        if not attempts:
            raise LogError(404, f"no log stored for task {task_id}")
        task = next((t for t in attempts if int(t.get("attempt_number") or 0) == attempt), None)
        if task is None:
            raise LogError(404, f"task {task_id} has no attempt {attempt} stored")
        if task.get("actor_id"):
            raise LogError(
                400,
                f"for actor task, please query actor log for actor({task['actor_id']}) by providing actor_id query parameter",
            )
        node = task.get("node_id")
        if not node:
            raise LogError(404, f"task {task_id} (attempt {attempt}) has no node (never scheduled?)")
        info = task.get("task_log_info") or {}
        name = info.get(f"std{suffix}_file")
        if name:
            start, end = int(info.get(f"std{suffix}_start") or 0), int(info.get(f"std{suffix}_end") or -1)
            return Located(str(node), str(name).rsplit("/", 1)[-1], start, end)
        if task.get("worker_id"):  # no range recorded: its worker's whole file, as upstream falls back
            return await self._worker_file(
                stored, str(node), f".{suffix}", f"task {task_id}", str(task["worker_id"])
            )
        raise LogError(404, f"no log stored for task {task_id}")

    async def _driver(self, stored: StoredSession, submission_id: str) -> Located:
        name = f"job-driver-{submission_id}.log"
        for job in await self.catalog.endpoint_json(stored, "/api/jobs/") or []:
            if job.get("submission_id") == submission_id:
                node = job.get("driver_node_id") or (job.get("driver_info") or {}).get("node_id")
                if node:
                    return Located(str(node), name)
        for node in await self.catalog.nodes_with_logs(stored):  # the driver's node was not recorded
            if name in await self.catalog.log_files(stored, node):
                return Located(node, name)
        raise LogError(404, f"no driver log stored for submission {submission_id}")

    async def response(self, stored: StoredSession, q: QueryParams) -> Response:
        try:
            o = options(q)
            found = await self.locate(stored, o)
            key = self.catalog.log_key(stored, found.node_id, found.filename)
            check_key(found.filename)  # a name with `..` or an empty part is no stored file (as upstream)
        except StorageError as e:
            return PlainTextResponse(f"invalid filename {found.filename!r}: {e}", 400)
        except LogError as e:
            return PlainTextResponse(str(e), e.status)
        except layout.LayoutError as e:
            return PlainTextResponse(str(e), 400)
        storage = self.catalog.storage
        size = await asyncio.to_thread(storage.size, key)
        if size is None:
            return PlainTextResponse(f"log file {found.filename} of node {found.node_id} is not stored", 404)
        end = size if found.end < 0 else min(found.end, size)
        start = min(found.start, end)
        if o.lines >= 0:  # the last lines of the file, or of the task's range
            start = max(start, await asyncio.to_thread(logs.tail_start, storage, key, end, o.lines))
        body = logs.stream(storage, key, start, end)
        return StreamingResponse(
            without_ansi(body) if o.filter_ansi_code else body,
            media_type="text/plain",
            headers={"Content-Disposition": content_disposition(o.download_filename or found.filename)},
        )


def content_disposition(name: str) -> str:
    """An attachment named `name` as RFC 6266 has it: the name as it is when it is plain printable ASCII
    without a quote or a backslash; else `filename` with those replaced and the whole name in `filename*`
    (UTF-8, percent-encoded). A name from the query (`download_filename`) can then neither end the header
    (a CR, LF or NUL, which uvicorn refuses to send: a 500), add a parameter (a quote), nor be unsendable."""
    plain = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in name)
    if plain == name:
        return f'attachment; filename="{name}"'
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{urllib.parse.quote(name, safe='')}"


async def without_ansi(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The bytes without Ray's color codes; a code cut by a chunk's end waits for the next chunk."""
    held = b""
    async for chunk in chunks:
        data, held = held + chunk, b""
        cut = data.rfind(b"\x1b")
        if cut >= 0 and _UNFINISHED_ANSI.fullmatch(data, cut):
            data, held = data[:cut], data[cut:]
        yield ANSI.sub(b"", data)
    if held:
        yield held
