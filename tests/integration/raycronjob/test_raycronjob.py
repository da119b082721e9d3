"""The RayCronJob controller against localkube, its time driven by a FakeClock (the runtime's clock seam): the
upstream samples make a RayJob at each tick, missed ticks are made one after another, suspend holds new
RayJobs back, each invalid spec gets upstream's message (at admission where upstream's CRD refuses it).
The real operator with its gate on and off, and a real `@every 5s` schedule, are in test_operator.py."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from integration.inprocess import Running, running_operator
from kuberay.api.features import Feature, FeatureGates
from kuberay.controllers.raycronjob import setup as raycronjob_setup
from kuberay.controllers.raycronjob.reconciler import RayCronJobReconciler
from kuberay.rayresources import RAYCRONJOB, RAYJOB
from kuberay.runtime import errors
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.controller import Result
from kuberay.runtime.events import EVENTS_V1
from kuberay.runtime.resources import ObjectKey
from support.eventually import eventually
from support.shared import UPSTREAM_SAMPLES

GATE_ON = FeatureGates({Feature.RAY_CRON_JOB: True})
SAMPLES = ["ray-cronjob.sample.yaml", "ray-cronjob-timezone.sample.yaml"]


def sample(file: str) -> dict[str, Any]:
    (cron,) = [
        d
        for d in yaml.safe_load_all((UPSTREAM_SAMPLES / file).read_text())
        if d and d["kind"] == "RayCronJob"
    ]
    return dict(cron)


def cronjob(namespace: str, name: str = "cron", schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(sample("ray-cronjob.sample.yaml"))
    body["metadata"] = {"name": name, "namespace": namespace}
    body["spec"] = {**body["spec"], "schedule": schedule, **spec}
    return body


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp).astimezone(UTC)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def minutes(moment: datetime) -> int:
    return int(moment.timestamp()) // 60


class Harness:
    def __init__(self, run: Running[RayCronJobReconciler], clock: FakeClock) -> None:
        self.run, self.clock = run, clock
        (self.namespace,) = run.namespaces

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        body["metadata"]["namespace"] = self.namespace
        return await self.run.client.create(RAYCRONJOB, body)

    async def cron(self, name: str = "cron") -> dict[str, Any]:
        return await self.run.client.get(RAYCRONJOB, name, self.namespace)

    async def rayjobs(self) -> dict[str, dict[str, Any]]:
        listed = await self.run.client.list(RAYJOB, self.namespace)
        return {job["metadata"]["name"]: job for job in listed.items}

    async def wait_rayjobs(self, names: set[str]) -> dict[str, dict[str, Any]]:
        async def made() -> dict[str, dict[str, Any]] | None:
            jobs = await self.rayjobs()
            return jobs if set(jobs) == names else None

        result: dict[str, dict[str, Any]] = await eventually(made, what=f"RayJobs {sorted(names)}")
        return result

    async def wait_last_schedule(self, tick: datetime, name: str = "cron") -> None:
        async def written() -> bool:
            return ((await self.cron(name)).get("status") or {}).get("lastScheduleTime") == rfc3339(tick)

        await eventually(written, what=f"lastScheduleTime {rfc3339(tick)}")

    async def advance_to(self, moment: datetime) -> None:
        self.clock.advance(max((moment - self.clock.now()).total_seconds(), 0.0))

    async def events(self, reason: str, name: str = "cron") -> list[dict[str, Any]]:
        await self.run.recorder.flush()
        listed = await self.run.client.list(EVENTS_V1, self.namespace)
        return [e for e in listed.items if e.get("reason") == reason and e["regarding"]["name"] == name]


@contextlib.asynccontextmanager
async def operator(localkube: Any) -> AsyncIterator[Harness]:
    # The fake clock starts at the real time, so that the API server's creationTimestamps are "now" for it.
    clock = FakeClock(start=datetime.now(UTC))
    async with running_operator(localkube, raycronjob_setup.install, gates=GATE_ON, clock=clock) as run:
        yield Harness(run, clock)


def first_after(created: datetime, hour: int, minute: int) -> datetime:
    """The first daily hour:minute (UTC) strictly after `created`."""
    candidate = created.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return candidate if candidate > created else candidate + timedelta(days=1)


@pytest.mark.parametrize("file", SAMPLES)
async def test_an_upstream_sample_makes_a_rayjob_at_each_tick(localkube: Any, file: str) -> None:
    async with operator(localkube) as op:
        cron = await op.create(sample(file))
        created = at(cron["metadata"]["creationTimestamp"])
        if file == "ray-cronjob.sample.yaml":  # "* * * * *"
            ticks = [created.replace(second=0) + timedelta(minutes=1)]
            ticks.append(ticks[0] + timedelta(minutes=1))
        else:  # "45 21 * * *" in Asia/Taipei (UTC+8, no daylight saving): 13:45 UTC
            ticks = [first_after(created, 13, 45)]
            ticks.append(ticks[0] + timedelta(days=1))
        name = cron["metadata"]["name"]
        expected = [f"{name}-{minutes(tick)}" for tick in ticks]

        await op.advance_to(ticks[0])
        jobs = await op.wait_rayjobs({expected[0]})
        await op.wait_last_schedule(ticks[0], name)
        job = jobs[expected[0]]
        assert job["metadata"]["labels"] == {"ray.io/cronjob-name": name}
        assert job["metadata"]["annotations"] == {"ray.io/cronjob-scheduled-timestamp": rfc3339(ticks[0])}
        (owner,) = job["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "RayCronJob",
            name,
            cron["metadata"]["uid"],
            True,
        )
        assert job["spec"] == cron["spec"]["jobTemplate"]

        await op.advance_to(ticks[1])
        await op.wait_rayjobs(set(expected))
        await op.wait_last_schedule(ticks[1], name)


async def test_missed_ticks_are_made_one_after_another(localkube: Any) -> None:
    async with operator(localkube) as op:
        cron = await op.create(cronjob(op.namespace, schedule="*/5 * * * *"))
        created = at(cron["metadata"]["creationTimestamp"])
        first = created.replace(minute=created.minute - created.minute % 5, second=0) + timedelta(minutes=5)
        missed = [first + timedelta(minutes=5 * i) for i in range(4)]
        # The operator "was away" for 17 minutes past the first tick: every tick since gets its RayJob.
        await op.advance_to(missed[-1] + timedelta(minutes=2))
        await op.wait_rayjobs({f"cron-{minutes(tick)}" for tick in missed})
        await op.wait_last_schedule(missed[-1])


async def test_a_pass_asks_to_be_run_again_at_the_next_tick(localkube: Any) -> None:
    """Upstream's example: `*/5 * * * *`, now 30 s past the first tick: its RayJob, then a requeue of 4m30s."""
    async with operator(localkube) as op:
        cron = await op.create(cronjob(op.namespace, schedule="*/5 * * * *"))
        created = at(cron["metadata"]["creationTimestamp"])
        tick = created.replace(minute=created.minute - created.minute % 5, second=0) + timedelta(minutes=5)
        await op.advance_to(tick + timedelta(seconds=30))
        await op.wait_rayjobs({f"cron-{minutes(tick)}"})
        key = ObjectKey(op.namespace, "cron")
        cache = op.run.manager.cache(RAYCRONJOB)

        async def cached() -> bool:
            return ((cache.get(key) or {}).get("status") or {}).get("lastScheduleTime") == rfc3339(tick)

        await eventually(cached, what="the status write in the cache")
        assert await op.run.reconciler.reconcile(key) == Result(requeue_after=270.0)


async def test_suspend_holds_back_new_rayjobs_and_resuming_makes_the_missed_ones(localkube: Any) -> None:
    async with operator(localkube) as op:
        cron = await op.create(cronjob(op.namespace, schedule="@every 1m", suspend=True))
        created = at(cron["metadata"]["creationTimestamp"])
        suspended = await eventually(lambda: op.events("SuspendedRayCronJob"), what="SuspendedRayCronJob")
        assert suspended[0]["type"] == "Normal"
        assert suspended[0]["note"] == "RayCronJob suspended, no new RayJobs will be created"
        assert suspended[0]["reportingController"] == "raycronjob-controller"
        # Suspended, no tick is due: the controller asked for no timer, so time passing makes nothing.
        await op.advance_to(created + timedelta(minutes=3, seconds=30))
        await op.run.client.patch(RAYCRONJOB, "cron", {"spec": {"suspend": False}}, op.namespace)
        # Resumed, the ticks it slept through are made (upstream does not skip them), oldest first.
        ticks = [created.replace(microsecond=0) + timedelta(minutes=i) for i in (1, 2, 3)]
        await op.wait_rayjobs({f"cron-{minutes(tick)}" for tick in ticks})
        await op.wait_last_schedule(ticks[-1])


async def test_deleting_the_rayjob_of_a_tick_does_not_make_it_again(localkube: Any) -> None:
    async with operator(localkube) as op:
        cron = await op.create(cronjob(op.namespace, schedule="@every 1m"))
        tick = at(cron["metadata"]["creationTimestamp"]) + timedelta(minutes=1)
        await op.advance_to(tick)
        (name,) = await op.wait_rayjobs({f"cron-{minutes(tick)}"})
        await op.wait_last_schedule(tick)
        await op.run.client.delete(RAYJOB, name, op.namespace)
        await op.run.client.patch(
            RAYCRONJOB, "cron", {"metadata": {"labels": {"touched": "yes"}}}, op.namespace
        )
        await op.advance_to(tick + timedelta(minutes=1))
        (later,) = await op.wait_rayjobs({f"cron-{minutes(tick) + 1}"})
        assert later != name


INVALID = [
    pytest.param({"name": "c" * 37}, "RayCronJob name should be no more than 36 characters", id="name"),
    pytest.param(
        {"schedule": "CRON_TZ=UTC */5 * * * *"},
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        id="tz-in-schedule",
    ),
    pytest.param(
        {"schedule": "invalid cron"},
        "invalid cron schedule: expected exactly 5 fields, found 2: [invalid cron]",
        id="schedule",
    ),
    pytest.param(
        {"schedule": "*/5 * * * 7"},
        "invalid cron schedule: end of range (7) above maximum (6): 7",
        id="day-of-week",
    ),
    pytest.param(
        {"timeZone": "Invalid/Zone"}, "invalid time zone: unknown time zone Invalid/Zone", id="time-zone"
    ),
    pytest.param(
        {"jobTemplate": {"entrypoint": "python -c 'print(1)'"}},
        "invalid RayJob template: The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set",
        id="template",
    ),
]


@pytest.mark.parametrize(("change", "message"), INVALID)
async def test_an_invalid_spec_gets_upstreams_message_and_no_rayjob(
    localkube: Any, change: dict[str, Any], message: str
) -> None:
    async with operator(localkube) as op:
        name = change.pop("name", "cron")
        body = cronjob(op.namespace, name=name, schedule=change.pop("schedule", "@every 1m"), **change)
        await op.create(body)
        (event,) = await eventually(lambda: op.events("InvalidRayCronJobSpec", name), what="the Warning")
        assert event["type"] == "Warning"
        assert event["note"] == f"{op.namespace}/{name}: {message}"
        assert event["action"] == "Validate"
        # No timer was asked for: however far time goes, the invalid RayCronJob makes nothing until it changes.
        op.clock.advance(3600)
        await op.run.client.patch(RAYCRONJOB, name, {"metadata": {"labels": {"seen": "yes"}}}, op.namespace)
        await eventually(lambda: _event_count(op, name, 2), what="the Warning again")
        assert await op.rayjobs() == {}
        assert "status" not in await op.cron(name) or not (await op.cron(name))["status"]


async def _event_count(op: Harness, name: str, count: int) -> bool:
    events = await op.events("InvalidRayCronJobSpec", name)
    return sum((e.get("series") or {}).get("count", 1) for e in events) >= count


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"timeZone": ""}, "spec.timeZone", id="empty-time-zone"),
        pytest.param({"schedule": None}, "spec.schedule", id="no-schedule"),
        pytest.param(
            {"jobTemplate": {"entrypoint": "x", "deletionStrategy": {
                "onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteCluster"},
                "deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}]}}},
            "spec.jobTemplate.deletionStrategy",
            id="template-cel",
        ),
    ],
)  # fmt: skip
async def test_upstreams_crd_refuses_some_specs_at_admission(
    localkube: Any, spec: dict[str, Any], field: str
) -> None:
    async with operator(localkube) as op:
        body = cronjob(op.namespace)
        body["spec"].update(spec)
        body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
        with pytest.raises(errors.Invalid) as refused:
            await op.create(body)
        assert field in str(refused.value)
