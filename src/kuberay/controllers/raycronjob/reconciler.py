"""The RayCronJob reconciler: at each tick of a RayCronJob's schedule, one RayJob made from its `jobTemplate`.

One pass (`reconcile(key)`), upstream's order:
1. Read the RayCronJob from the cache (gone: nothing to do; its RayJobs go with it by garbage collection).
2. Validate (`kuberay.api.validation.validate_raycronjob`); an invalid one gets a Warning Event
   `InvalidRayCronJobSpec` with upstream's first message and waits for its next change (no status, no requeue).
3. `spec.suspend: true`: a Normal Event `SuspendedRayCronJob` on every pass, nothing else. RayJobs already
   made run on.
4. The next tick after `status.lastScheduleTime` (or the creation time) is computed by `schedule`. Still in
   the future: requeue at it, no write. Otherwise create its RayJob (`child`; AlreadyExists is success, so a
   pass repeated after a failed status write never makes a second RayJob for a tick), then write
   `status.lastScheduleTime = tick` and requeue at the tick after it.

A schedule that validates but names no existing time (`0 0 30 2 *`) fails every pass with
`schedule.NeverFires` (logged, retried with backoff), as upstream's fails every pass.

Missed ticks (the operator was down, the RayCronJob was suspended across ticks): one tick per pass, the oldest
first. The status write is itself a change of the watched RayCronJob, which brings the next pass at once, so
every missed tick gets its RayJob, one after another, with no cap and none skipped, as upstream.

The reconciler never sleeps: "wait until the tick" is a requeue after the time left on the runtime's clock,
so a test drives ticks by moving a fake clock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from kuberay.api.features import FeatureGates
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.validation import validate_raycronjob
from kuberay.controllers.raycronjob import child, schedule
from kuberay.rayresources import RAYCRONJOB, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.controller import Result
from kuberay.runtime.events import NORMAL, WARNING, Recorder
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import ObjectKey
from kuberay.runtime.steps import step
from kubesemantics import times

log = logging.getLogger(__name__)


INVALID_SPEC = "InvalidRayCronJobSpec"
SUSPENDED = "SuspendedRayCronJob"
SUSPENDED_MESSAGE = "RayCronJob suspended, no new RayJobs will be created"


@dataclass(frozen=True)
class Options:
    gates: FeatureGates = field(default_factory=FeatureGates)
    # The zone of a schedule without `spec.timeZone` (and of `timeZone: Local`): the operator's own.
    local_zone: tzinfo = UTC


class RayCronJobReconciler:
    def __init__(
        self,
        client: Client,
        cronjobs: Store,
        options: Options,
        clock: Clock,
        recorder: Recorder | None = None,
    ) -> None:
        self.client = client
        self.cronjobs = cronjobs
        self.options = options
        self.clock = clock
        self.recorder = recorder

    async def reconcile(self, key: ObjectKey) -> Result:
        cached = self.cronjobs.get(key)
        if cached is None:
            return Result()
        obj: dict[str, Any] = thaw(cached)
        cron = RayCronJob.parse(obj)
        problems = validate_raycronjob(cron, self.options.gates)
        if problems:
            note = f"{key.namespace}/{key.name}: {problems[0].message}"
            self._event(obj, WARNING, INVALID_SPEC, note, "Validate")
            return Result()
        if cron.spec.suspend:
            self._event(obj, NORMAL, SUSPENDED, SUSPENDED_MESSAGE, "Suspend")
            return Result()

        zone = schedule.zone_named(cron.spec.time_zone or "Local", self.options.local_zone)
        fires = schedule.parse(cron.spec.schedule, zone)
        now = self.clock.now()
        last = cron.status.last_schedule_time if cron.status is not None else None
        tick = fires.next(times.parse_time(last or obj["metadata"]["creationTimestamp"]).astimezone(UTC))
        if tick > now:
            return Result(requeue_after=(tick - now).total_seconds())

        rayjob = child.build_rayjob(cron, tick)
        with step("CreateRayJob"):
            try:
                await self.client.create(RAYJOB, rayjob)
                log.info("RayCronJob %s: created RayJob %s for %s", key, rayjob["metadata"]["name"], tick)
            except errors.AlreadyExistsError:
                log.info("RayCronJob %s: the RayJob for %s exists already", key, tick)
        status = {**(obj.get("status") or {}), "lastScheduleTime": times.format_time(tick)}
        with step("UpdateStatus"):
            await self.client.update_status(RAYCRONJOB, {**obj, "status": status})
        # A next tick already due needs no timer: the status write above brings the next pass.
        wait = (fires.next(tick) - now).total_seconds()
        return Result(requeue_after=wait) if wait > 0 else Result()

    def _event(self, obj: dict[str, Any], type: str, reason: str, message: str, action: str) -> None:
        if self.recorder is not None:
            self.recorder.record(obj, type, reason, message, action)
