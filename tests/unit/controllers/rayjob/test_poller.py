"""The job-status poller: one poll per key at a time, answers of stale targets dropped, HTTPMode submission,
a reconcile queued only when the answer changes, never more dashboards in flight than workers."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from kuberay.controllers.rayjob.poller import JobStatusPoller, PollTarget
from kuberay.rayclient.dashboard import JobNotFound, JobSubmitRequest
from kuberay.runtime.resources import ObjectKey
from support.eventually import eventually
from unit.controllers.rayjob.fakedashboard import FakeDashboard, running


@pytest.fixture
def dashboard() -> FakeDashboard:
    return FakeDashboard()


def poller_for(dashboard: FakeDashboard, notified: list[ObjectKey], workers: int = 2) -> JobStatusPoller:
    http = httpx.AsyncClient(transport=httpx.MockTransport(dashboard))
    return JobStatusPoller(http, workers=workers, min_interval=0.0, notify=notified.append)


KEY = ObjectKey("ns", "job")
TARGET = PollTarget("http://head:8265", "job-1")


async def settle(poller: JobStatusPoller, key: ObjectKey, target: PollTarget) -> None:
    await eventually(
        lambda: poller.latest(key, target) is not None and not poller._entries[key].queued,
        5,
        "an answer",
        every=0.005,
    )


async def test_answers_are_kept_per_target_and_change_notifies(dashboard: FakeDashboard) -> None:
    notified: list[ObjectKey] = []
    poller = poller_for(dashboard, notified)
    async with running(poller):
        assert poller.latest(KEY, TARGET) is None
        poller.watch(KEY, TARGET)
        await settle(poller, KEY, TARGET)
        assert isinstance(poller.latest(KEY, TARGET).error, JobNotFound)
        dashboard.jobs["job-1"] = "RUNNING"
        poller.watch(KEY, TARGET)
        await asyncio.sleep(0.05)
        assert poller.latest(KEY, TARGET).info.status == "RUNNING"
        poller.watch(KEY, TARGET)  # same answer again: no new reconcile
        await asyncio.sleep(0.05)
        assert notified == [KEY, KEY]
        retry = PollTarget("http://head:8265", "job-2")
        assert poller.latest(KEY, retry) is None  # another attempt never sees the old answer
        poller.forget(KEY)
        assert poller.latest(KEY, TARGET) is None


async def test_http_mode_submits_a_job_the_dashboard_does_not_know(dashboard: FakeDashboard) -> None:
    notified: list[ObjectKey] = []
    poller = poller_for(dashboard, notified)
    target = PollTarget("http://head:8265", "job-1", submit=JobSubmitRequest("python x.py", "job-1"))
    async with running(poller):
        poller.watch(KEY, target)
        await settle(poller, KEY, target)
        submitted = poller.latest(KEY, target)
        assert submitted.submitted and submitted.error is None and submitted.info is None
        assert notified == [KEY]  # the submission's outcome is an answer of its own
        poller.watch(KEY, target)
        await asyncio.sleep(0.05)
        assert poller.latest(KEY, target).info.status == "PENDING"
    assert dashboard.calls == ["GET /api/jobs/job-1", "POST /api/jobs/", "GET /api/jobs/job-1"]


async def test_http_mode_failed_submission_is_the_answer(dashboard: FakeDashboard) -> None:
    dashboard.refuse_submissions = True
    poller = poller_for(dashboard, [])
    target = PollTarget("http://head:8265", "job-1", submit=JobSubmitRequest("python x.py", "job-1"))
    async with running(poller):
        poller.watch(KEY, target)
        await settle(poller, KEY, target)
    answer = poller.latest(KEY, target)
    assert answer.submitted and answer.error is not None and not isinstance(answer.error, JobNotFound)


async def test_one_poll_per_key_and_no_more_in_flight_than_workers(dashboard: FakeDashboard) -> None:
    dashboard.gate = asyncio.Event()
    poller = poller_for(dashboard, [], workers=2)
    keys = [ObjectKey("ns", f"job{i}") for i in range(5)]
    async with running(poller):
        for _ in range(3):
            for key in keys:
                poller.watch(key, TARGET)
        await asyncio.sleep(0.05)
        assert dashboard.in_flight == 2
        dashboard.gate.set()
        for key in keys:
            await settle(poller, key, TARGET)
    assert dashboard.most_in_flight == 2
    assert len(dashboard.calls) == 5  # repeated watches of a queued key add nothing
