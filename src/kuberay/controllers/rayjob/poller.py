"""Job-status polling in its own bounded worker pool, so that no reconcile waits on a Ray dashboard.

A reconcile of a Running RayJob reads `latest(key, target)`, the latest observation of exactly that target
(the dashboard base URL and job id of the current attempt; None before the first answer), and calls
`watch(key, target)`, which returns at once and, if the target has not been asked within `min_interval`,
queues one poll. `workers` tasks take polls from
the queue; each asks the dashboard for the job's info and, for an HTTPMode target the dashboard does not
know, submits the job: the submission's outcome is then the answer, and the next poll reads the job's info.
When an answer differs from the previous one, `notify(key)` queues a reconcile, so status follows Ray within
one poll instead of one requeue period.

Invariants:
- at most one poll per key is queued or running at any time, so the queue is bounded by the number of
  Running RayJobs and a slow dashboard occupies at most `workers` tasks;
- an answer is kept only if its key still has the same target (a retry or a suspension in the meantime
  makes it stale); `forget(key)` drops the key and anything in flight for it;
- dashboard calls carry the client's short timeout (2 s direct, 10 s through the API server's proxy).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from kuberay.controllers.rayjob.decision import Observation
from kuberay.rayclient.dashboard import DashboardClient, DashboardError, JobNotFound, JobSubmitRequest
from kuberay.runtime.clock import Clock, SystemClock
from kuberay.runtime.resources import ObjectKey

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PollTarget:
    """One attempt's job on one dashboard."""

    base_url: str
    job_id: str
    token: str | None = None
    submit: JobSubmitRequest | None = None  # HTTPMode: submit this when the dashboard does not know the job


@dataclass
class _Entry:
    target: PollTarget
    observation: Observation | None = None
    polled_at: float | None = None
    queued: bool = False


@dataclass
class JobStatusPoller:
    http: httpx.AsyncClient
    workers: int = 4
    min_interval: float = 1.0
    clock: Clock = field(default_factory=SystemClock)
    # Queues a reconcile of a key whose answer changed (the controller's work queue `add`).
    notify: Callable[[ObjectKey], None] = field(default=lambda key: None)
    _entries: dict[ObjectKey, _Entry] = field(init=False, default_factory=dict)
    _queue: asyncio.Queue[ObjectKey] = field(init=False, default_factory=asyncio.Queue)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"job status poller: workers must be at least 1, got {self.workers}")

    def latest(self, key: ObjectKey, target: PollTarget) -> Observation | None:
        """The latest observation of exactly `target` for `key` (None before the first answer)."""
        entry = self._entries.get(key)
        return entry.observation if entry is not None and entry.target == target else None

    def watch(self, key: ObjectKey, target: PollTarget) -> None:
        """Keeps `target` polled for `key` (replacing another target); queues a poll when one is due."""
        entry = self._entries.get(key)
        if entry is None or entry.target != target:
            entry = self._entries[key] = _Entry(target)
        due = entry.polled_at is None or self.clock.monotonic() - entry.polled_at >= self.min_interval
        if due and not entry.queued:
            entry.queued = True
            self._queue.put_nowait(key)

    def forget(self, key: ObjectKey) -> None:
        self._entries.pop(key, None)

    @property
    def watched(self) -> int:
        return len(self._entries)

    async def run(self) -> None:
        """Runs the workers until cancelled."""
        async with asyncio.TaskGroup() as tasks:
            for _ in range(self.workers):
                tasks.create_task(self._worker())

    async def _worker(self) -> None:
        while True:
            key = await self._queue.get()
            entry = self._entries.get(key)
            if entry is None:
                continue
            try:
                observation = await self.poll(entry.target)
            except Exception:  # a bug here must not kill the pool
                log.exception("polling %s failed unexpectedly", key)
                observation = None
            entry.queued = False
            entry.polled_at = self.clock.monotonic()
            if observation is None or self._entries.get(key) is not entry:
                continue
            changed = _signature(observation) != _signature(entry.observation)
            entry.observation = observation
            if changed:
                self.notify(key)

    async def poll(self, target: PollTarget) -> Observation:
        """Asks the dashboard once (and submits an HTTPMode job it does not know)."""
        client = DashboardClient(self.http, target.base_url, token=target.token)
        try:
            return Observation(info=await client.get_job_info(target.job_id))
        except JobNotFound as missing:
            if target.submit is None:
                return Observation(error=missing)
        except DashboardError as error:
            return Observation(error=error)
        try:
            await client.submit_job(target.submit)
        except DashboardError as error:
            log.warning("submitting Ray job %s to %s failed: %s", target.job_id, target.base_url, error)
            return Observation(error=error, submitted=True)
        log.info("submitted Ray job %s to %s", target.job_id, target.base_url)
        return Observation(submitted=True)


def _signature(observation: Observation | None) -> object:
    if observation is None:
        return None
    if observation.error is not None:
        return (observation.submitted, type(observation.error), str(observation.error))
    return (observation.submitted, observation.info)
