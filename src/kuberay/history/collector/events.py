"""Ray's exported events (`RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR`, which the operator points at
this collector's `POST /v1/events`): spooled to local JSON-lines files, then uploaded as immutable objects.

A batch is acknowledged (200) only once appended and fsynced to the spool's active file of its category
(`node_events` for NODE_* events, `job_events/<job id hex>` for those with a job, as upstream files them).
Rotation renames an active file to its final name (`<node id>-<hour>-<nanoseconds>.jsonl`) before anything is
uploaded, so an upload is repeatable: a collector killed mid-upload finds the rotated file on start and puts
it again under the same key, and a file is removed from the spool only after its put returned. While
draining (SIGTERM) new batches get 503 with Retry-After, so Ray keeps them for another try elsewhere.

The spool is bounded (`--event-max-disk-mb`, upstream's flag and default): a batch that would take it past
the bound is refused, not an older one dropped, with 503 and Retry-After as upstream's disk pressure is (a
batch larger than the whole bound with 413, since no retry can fit it). What was acknowledged is thus never
lost to the bound; Ray keeps the refused batch and sends it again. The spool says once in the log that it
is full, and once that it has room again, which it has as soon as an upload removes files.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import os
import posixpath
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from kuberay.history import layout
from kuberay.history.storage import Storage

log = logging.getLogger("kuberay.history.collector")

ACTIVE = "active.jsonl"
# The payloads that carry a job id (upstream's list).
_WITH_JOB = (
    "taskDefinitionEvent",
    "taskLifecycleEvent",
    "actorTaskDefinitionEvent",
    "taskProfileEvents",
    "driverJobDefinitionEvent",
    "driverJobLifecycleEvent",
    "actorDefinitionEvent",
)
# Why a batch was refused: it would take the spool past its bound, or it is larger than the bound itself.
Refusal = Literal["full", "too large"]
_SAFE = re.compile(r"^[0-9A-Za-z_-]+$")


# Go's decoders, as upstream decodes: URL-safe without padding, else standard with it; nothing else is base64.
_RAW_URL_B64 = re.compile(r"[A-Za-z0-9_-]*")
_STD_B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def job_id_hex(raw: str) -> str:
    """A job id as upstream files it: hex, whether it came as hex or as base64; an id that is neither is
    kept as it came (Python's lenient decoder would drop stray characters and make some other id of it)."""
    if re.fullmatch(r"[0-9a-fA-F]+", raw):
        return raw.lower()
    if len(raw) % 4 != 1 and _RAW_URL_B64.fullmatch(raw):
        return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex()
    if _STD_B64.fullmatch(raw):
        return base64.b64decode(raw, validate=True).hex()
    return raw


def category(event: dict[str, Any]) -> str:
    """`node_events`, or `job_events/<job id>` for an event of a job."""
    if str(event.get("eventType", "")).startswith("NODE_"):
        return layout.NODE_EVENTS_DIR
    for payload in _WITH_JOB:
        nested = event.get(payload)
        if isinstance(nested, dict) and nested.get("jobId"):
            job = job_id_hex(str(nested["jobId"]))
            if _SAFE.match(job):
                return posixpath.join(layout.JOB_EVENTS_DIR, job)
    return layout.NODE_EVENTS_DIR


class EventSpool:
    """The spool directory: `<session>/<category>/active.jsonl` plus rotated files waiting for upload."""

    def __init__(self, directory: Path, default_session: Callable[[], str | None], max_bytes: int) -> None:
        self.directory = directory
        self._default_session = default_session
        self.draining = False
        self.max_bytes = max_bytes
        self.full = False  # since a batch was refused, until an upload makes room
        # Appends run on the event loop, uploads in a round's thread: both change the count.
        self._count_lock = threading.Lock()
        self._used = sum(f.stat().st_size for f in directory.rglob("*.jsonl")) if directory.is_dir() else 0

    @property
    def used(self) -> int:
        """The spool's bytes on disk."""
        return self._used

    def _admit(self, size: int) -> Refusal | None:
        """Counts a batch of `size` bytes in, or says why it does not fit; logs when the spool gets full."""
        if size > self.max_bytes:
            log.warning(
                "refusing an event batch of %d bytes: the spool holds %d at most", size, self.max_bytes
            )
            return "too large"
        with self._count_lock:
            if self._used + size <= self.max_bytes:
                self._used += size
                return None
            if not self.full:
                self.full = True
                log.warning(
                    "event spool full (%d of %d bytes): refusing new event batches until uploads make room",
                    self._used, self.max_bytes,
                )  # fmt: skip
            return "full"

    def _freed(self, size: int) -> None:
        with self._count_lock:
            self._used -= size
            if self.full:
                self.full = False
                log.info("event spool has room again (%d of %d bytes)", self._used, self.max_bytes)

    def recover(self) -> None:
        """Cuts each active file back to its last whole line: a batch cut short by a kill was never
        acknowledged, and the next batch must not be glued to its half line."""
        for active in self.directory.rglob(ACTIVE):
            data = active.read_bytes()
            whole = data.rfind(b"\n") + 1
            if whole < len(data):
                with active.open("r+b") as f:
                    f.truncate(whole)
                    os.fsync(f.fileno())
                self._freed(len(data) - whole)

    def append(self, events: list[dict[str, Any]]) -> Refusal | None:
        """Appends a batch durably (fsync) before it is acknowledged; or, writing nothing, says why it does
        not fit within the bound."""
        by_file: dict[Path, list[bytes]] = {}
        for event in events:
            session = str(event.get("sessionName") or self._default_session() or "")
            if not session or not _SAFE.match(session):
                session = "unknown"
            path = self.directory / session / category(event) / ACTIVE
            by_file.setdefault(path, []).append(json.dumps(event, separators=(",", ":")).encode() + b"\n")
        refused = self._admit(sum(len(line) for lines in by_file.values() for line in lines))
        if refused is not None:
            return refused
        for path, lines in by_file.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as out:
                out.write(b"".join(lines))
                out.flush()
                os.fsync(out.fileno())
        return None

    def rotate(self, node_id: str) -> None:
        """Gives every non-empty active file its final name."""
        for active in self.directory.rglob(ACTIVE):
            if active.stat().st_size == 0:
                continue
            now = time.time_ns()
            hour = datetime.datetime.fromtimestamp(now / 1e9, datetime.UTC).strftime("%Y-%m-%d-%H")
            active.rename(active.with_name(f"{node_id}-{hour}-{now}.jsonl"))

    def upload(self, storage: Storage, session_key: Callable[[str], str]) -> int:
        """Puts every rotated file under `session_key(session)/<category>/<name>` and removes it from the
        spool once stored; returns how many. Files of sessions whose name is not Ray's are dropped."""
        uploaded = 0
        for path in sorted(self.directory.rglob("*.jsonl")):
            if path.name == ACTIVE:
                continue
            rel = path.relative_to(self.directory).as_posix()
            session, rest = rel.split("/", 1)
            try:
                base = session_key(session)
            except layout.LayoutError:
                log.warning("dropping events of unknown session %r", session)
                self._unlink(path)
                continue
            storage.put(posixpath.join(base, rest), path.read_bytes())
            self._unlink(path)
            uploaded += 1
        return uploaded

    def _unlink(self, path: Path) -> None:
        size = path.stat().st_size
        path.unlink()
        self._freed(size)

    def app(self, *routes: Route) -> Starlette:
        """`POST /v1/events`: a JSON array of Ray events; the collector's other `routes` beside it."""

        async def receive(request: Request) -> Response:
            if self.draining:
                return PlainTextResponse(
                    "event collector is shutting down", status_code=503, headers={"Retry-After": "5"}
                )
            try:
                events = json.loads(await request.body())
            except ValueError as e:
                return PlainTextResponse(f"invalid JSON: {e}", status_code=400)
            if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
                return PlainTextResponse("expected a JSON array of events", status_code=400)
            refused = self.append(events)
            if refused == "too large":
                return PlainTextResponse("event batch larger than the whole event spool", 413)
            if refused == "full":
                return PlainTextResponse(
                    "event spool full: uploads have not kept up",
                    status_code=503,
                    headers={"Retry-After": "10"},
                )
            return PlainTextResponse("ok")

        return Starlette(routes=[Route("/v1/events", receive, methods=["POST"]), *routes])
