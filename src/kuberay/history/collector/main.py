"""`kuberay-history-collector`: the sidecar's process.

It waits for Ray's session on its pod, learns the node's Ray id, then every push interval uploads the logs
that changed and the rotated event files, and (on the head) every poll interval the dashboard's answers and,
once per session, the session's metadata object (what the server lists). The head's last snapshot is taken
while the dashboard is still up, when the Ray container's preStop hook asks for it (`ending`), else on
SIGTERM; it is followed by the session's end record. On SIGTERM (the pod is going) it stops taking events
and runs one last upload of everything, bounded by `RAY_COLLECTOR_FLUSH_TIMEOUT`, then exits; a SIGKILL at
any point loses nothing that was acknowledged (see `logsync` and `events`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from starlette.routing import Route

from kuberay.history import layout
from kuberay.history.backends import from_env
from kuberay.history.collector import node, settings
from kuberay.history.collector.ending import FINAL_SNAPSHOT_PATH, Finale, Result
from kuberay.history.collector.events import EventSpool
from kuberay.history.collector.logsync import LogSync
from kuberay.history.collector.snapshots import Snapshots
from kuberay.history.storage import Storage, StorageError
from kuberay.runtime import asgiserver

log = logging.getLogger("kuberay.history.collector")

AUTH_HEADER = "x-ray-authorization"


def spool_dir(ray_root: Path) -> Path:
    """The event spool, inside the pod's shared /tmp/ray so that it outlives a restart of the collector."""
    return ray_root / "history-collector" / "events"


@dataclass
class _Session:
    name: str
    node_id: str
    logs: LogSync
    metadata_written: bool = False
    # Once the final snapshot is taken (`Collector.final_snapshot`), the dashboard is not polled again for
    # this session, and `ending` is what its end record says: the reason and the snapshot's outcome.
    ending: tuple[str, Result] | None = None


@dataclass
class Collector:
    """One collector's state; `step` does one round of uploads, `flush` the last one."""

    settings: settings.Settings
    storage: Storage
    spool: EventSpool = field(init=False)
    session: _Session | None = None
    _last_snapshot: float = -math.inf  # the first round snapshots, however young the machine's clock
    # A round and the final snapshot (asked by the preStop hook, from the event server) never overlap: they
    # share the log sync and the spool, neither of which is thread-safe.
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.spool = EventSpool(
            spool_dir(self.settings.ray_root),
            lambda: self.session.name if self.session else None,
            self.settings.event_max_disk_bytes,
        )
        headers = {AUTH_HEADER: f"Bearer {self.settings.auth_token}"} if self.settings.auth_token else {}
        self.headers = headers
        self.snapshots = Snapshots(self.storage, self.settings.dashboard, headers)

    def _discover(self) -> None:
        """Finds the live session and this node's id; a new session gets a new log sync."""
        directory = node.session_dir(self.settings.ray_root)
        if directory is None or (self.session is not None and self.session.name == directory.name):
            return
        node_id = node.node_id_from_dashboard(self.settings.dashboard, self.settings.pod_ip, self.headers)
        node_id = node_id or node.node_id_from_raylet(directory)
        if node_id is None:
            return  # Ray is still starting: next round
        if self.session is not None:
            self.session.logs.sync()  # what the previous session wrote last
            self._record_end(self.session, "done")  # a restarted Ray container's session is over
        root, cluster = self.settings.storage_root, self.settings.cluster
        # What a previous run of this collector, killed mid-upload, left in its own directories.
        self.storage.sweep(cluster.node_dir(root, directory.name, node_id))
        if self.settings.head:
            self.storage.sweep(cluster.endpoints_dir(root, directory.name))
        keys = LogSync(
            self.storage, directory / layout.LOGS_DIR, cluster.logs_dir(root, directory.name, node_id)
        )
        self.session = _Session(directory.name, node_id, keys)
        self._last_snapshot = -math.inf  # a new session is snapshotted at once
        log.info("collecting session %s of node %s", directory.name, node_id)

    def _metadata(self, session: _Session) -> None:
        cluster, root = self.settings.cluster, self.settings.storage_root
        info = layout.session_info(cluster, session.name)
        self.storage.put(cluster.metadata_key(root, session.name), json.dumps(info).encode())
        session.metadata_written = True

    def _event_key(self, session_name: str) -> str:
        assert self.session is not None
        return self.settings.cluster.node_dir(self.settings.storage_root, session_name, self.session.node_id)

    def _record_end(self, session: _Session, final_upload: str) -> None:
        """The session's end record (`layout.session_end`), from the head only: it speaks for the session."""
        if not self.settings.head or session.ending is None:
            return
        reason, snapshot = session.ending
        record = layout.session_end(
            session.name, datetime.datetime.now(datetime.UTC), reason, snapshot, final_upload
        )
        key = self.settings.cluster.session_end_key(self.settings.storage_root, session.name)
        self.storage.put(key, json.dumps(record).encode())

    def final_snapshot(self, reason: str) -> Result:
        """The session's last snapshot of the dashboard and its end record, once (blocking). Only what needs
        the dashboard is done here, while the preStop hook holds the Ray container up; the logs and events
        follow in the rounds and the final flush."""
        with self._lock:
            self._discover()
            session = self.session
            if session is None or not self.settings.head:
                return None
            if session.ending is not None:
                return session.ending[1]
            if not session.metadata_written:
                self._metadata(session)
            endpoints = self.settings.cluster.endpoints_dir(self.settings.storage_root, session.name)
            taken = self.snapshots.take(endpoints, timeout=2.0)
            snapshot: Result = {"succeeded": taken.succeeded, "unanswered": taken.unanswered}
            session.ending = (reason, snapshot)
            self._record_end(session, "pending")
            log.info(
                "final snapshot of session %s (%s): %s", session.name, reason,
                "stored" if taken.succeeded else f"the dashboard did not answer {taken.unanswered or 'the jobs'}",
            )  # fmt: skip
            return snapshot

    def step(self, final: bool = False) -> None:
        """One round (blocking: the loop runs it in a thread); the final one records the session's end."""
        with self._lock:
            self._discover()
            session = self.session
            if session is None:
                return
            if self.settings.head and not session.metadata_written:
                self._metadata(session)
            session.logs.sync()
            if final:
                self.spool.draining = True
            self.spool.rotate(session.node_id)
            self.spool.upload(self.storage, self._event_key)
            now = time.monotonic()
            due = now - self._last_snapshot >= self.settings.poll_interval
            if self.settings.head and session.ending is None and due:
                endpoints = self.settings.cluster.endpoints_dir(self.settings.storage_root, session.name)
                self.snapshots.take(endpoints, timeout=5.0)
                self._last_snapshot = now
            if final:
                session.logs.sync()  # what Ray wrote while the events were uploaded
                self._record_end(session, "done")

    def record_failed_upload(self) -> None:
        """The end record of a final upload that failed (blocking)."""
        with self._lock:
            if self.session is not None:
                self._record_end(self.session, "failed")


async def run(
    collector: Collector,
    stop: asyncio.Event,
    host: str = "0.0.0.0",
    reason: Callable[[], str] = lambda: "SIGTERM",
) -> None:
    """Runs until `stop`, then takes the final snapshot (unless the preStop hook had it taken) and flushes,
    within the bound; `reason` names the signal that stopped it."""
    collector.spool.recover()
    finale = Finale(collector.final_snapshot, collector.settings.flush_timeout)
    cluster = collector.settings.cluster
    log.info(
        "collecting for %s %s/%s (%s node), events on port %d",
        cluster.kind, cluster.namespace, cluster.name, "head" if collector.settings.head else "worker",
        collector.settings.events_port,
    )  # fmt: skip
    final_route = Route(FINAL_SNAPSHOT_PATH, finale.route, methods=["GET", "POST"])
    config = uvicorn.Config(
        collector.spool.app(final_route), host=host, port=collector.settings.events_port, log_level="warning"
    )
    server = asgiserver.Server(config)
    listening = asyncio.create_task(server.serve())
    settings = collector.settings
    # The head's round also takes the dashboard's snapshots, at the poll interval when that is shorter.
    interval = (
        min(settings.push_interval, settings.poll_interval) if settings.head else settings.push_interval
    )
    while not stop.is_set():
        try:
            await asyncio.to_thread(collector.step)
        except StorageError as e:
            log.warning("upload failed, retrying next round: %s", e)
        except Exception:  # the sidecar outlives any one bad round: the next one retries
            log.exception("collection round failed, retrying next round")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
    collector.spool.draining = True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + collector.settings.flush_timeout
    # The event server stays up meanwhile: a preStop hook that comes after SIGTERM waits for the same.
    await finale.wait(reason())
    try:
        await asyncio.wait_for(asyncio.to_thread(collector.step, True), max(0.0, deadline - loop.time()))
        log.info("final upload done")
    except TimeoutError:
        log.error("final upload did not finish within %s s", collector.settings.flush_timeout)
    except StorageError as e:
        log.error("final upload failed: %s", e)
        with contextlib.suppress(StorageError, TimeoutError):
            await asyncio.wait_for(asyncio.to_thread(collector.record_failed_upload), 5.0)
    server.should_exit = True
    await listening


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kuberay-history-collector",
        description="Uploads a Ray node's logs, events and (on the head) dashboard snapshots for the "
        "History Server. Configured by env: RAY_CLUSTER_NAME, RAY_CLUSTER_NAMESPACE, RAY_ROLE, "
        "OWNER_KIND, OWNER_NAME, EVENTS_PORT, STORAGE_BACKEND and the backend's variables.",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--event-max-disk-mb",
        type=int,
        default=settings.EVENT_MAX_DISK_MB,
        help="the event spool's bound: new event batches are refused (503) while it is full",
    )
    args = parser.parse_args(argv)
    if args.event_max_disk_mb <= 0:
        parser.error("--event-max-disk-mb must be positive")
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per snapshot request otherwise
    try:
        config = dataclasses.replace(
            settings.from_env(), event_max_disk_bytes=args.event_max_disk_mb * settings.MIB
        )
        storage = from_env(os.environ)
    except (settings.CollectorSettingsError, StorageError) as e:
        print(f"kuberay-history-collector: {e}", file=sys.stderr)
        return 2

    async def serve() -> None:
        stop = asyncio.Event()
        received: list[str] = []

        def stopped(name: str) -> None:
            received.append(name)
            stop.set()

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopped, signal.Signals(signum).name)
        await run(Collector(config, storage), stop, reason=lambda: received[0] if received else "SIGTERM")

    asyncio.run(serve())
    return 0
