import asyncio

import pytest

from kuberay.runtime.clock import FakeClock
from kuberay.runtime.ratelimit import ItemBackoff, RequeueRateLimiter, TokenBucket
from kuberay.runtime.workqueue import ShutDown, WorkQueue
from support.eventually import loop_turns


def queue() -> tuple[WorkQueue[str], FakeClock]:
    clock = FakeClock()
    return WorkQueue[str](clock), clock


async def drain(q: WorkQueue[str]) -> list[str]:
    """Every key ready now, in order, each marked done."""
    keys = []
    while len(q):
        key = await q.get()
        q.done(key)
        keys.append(key)
    return keys


async def test_adds_of_a_waiting_key_are_deduplicated():
    q, _ = queue()
    for key in ["a", "b", "a", "a", "b", "c"]:
        q.add(key)
    assert await drain(q) == ["a", "b", "c"]


async def test_a_key_is_never_handed_to_two_workers_at_once():
    q, _ = queue()
    q.add("a")
    first = await q.get()
    q.add("a")  # changed while being processed
    assert len(q) == 0
    second = asyncio.ensure_future(q.get())
    await loop_turns()
    assert not second.done()
    q.done(first)
    assert await asyncio.wait_for(second, 1) == "a"


async def test_a_key_readded_while_processing_goes_behind_the_waiting_keys():
    q, _ = queue()
    q.add("huge")
    key = await q.get()
    q.add("huge")  # its own writes come back as events
    q.add("small-1")
    q.add("small-2")
    q.done(key)
    assert await drain(q) == ["small-1", "small-2", "huge"]


async def test_a_key_that_keeps_requeueing_takes_turns_with_the_others():
    q, _ = queue()
    for key in ["huge", "a", "b"]:
        q.add(key)
    order = []
    for _ in range(6):
        key = await q.get()
        order.append(key)
        q.done(key)
        if key == "huge":
            q.add("huge")
    assert order[:4] == ["huge", "a", "b", "huge"]


async def test_an_older_key_readded_later_goes_ahead_of_keys_that_came_well_after_it():
    q, clock = queue()
    q.add("first")
    key = await q.get()
    q.add_after(key, 300.0)  # its first pass made pods and asked for the periodic resync, as RayClusters do
    q.done(key)
    for i in range(5):
        clock.advance(1.0)
        q.add(f"later-{i}")
    q.add("first")  # its pods are running: the pass that makes it ready
    assert await drain(q) == ["first", *(f"later-{i}" for i in range(5))]


async def test_a_key_that_keeps_requeueing_falls_behind_newer_keys():
    q, clock = queue()
    q.add("busy")
    clock.advance(1.0)
    q.add("newer")
    order = []
    for _ in range(4):
        key = await q.get()
        order.append(key)
        if key == "busy":
            q.add("busy")  # its own writes come back while it is processed
        q.done(key)
    assert order == ["busy", "busy", "newer", "busy"]  # each pass costs it PASS_COST_S of its age


async def test_the_queue_forgets_a_key_with_no_work_left():
    q, clock = queue()
    for i in range(100):
        q.add(f"k{i}")
    q.add_after("delayed", 5.0)
    await drain(q)
    assert set(q._rank) == set()  # nothing kept for the 100 keys done with
    clock.advance(5.0)
    key = await q.get()
    q.done(key)
    assert key == "delayed" and not q._rank


async def test_delayed_add_waits_for_the_clock_and_the_earliest_due_time_wins():
    q, clock = queue()
    q.add_after("a", 10)
    q.add_after("a", 5)
    q.add_after("a", 20)
    getter = asyncio.ensure_future(q.get())
    await loop_turns()
    clock.advance(4.9)
    await loop_turns()
    assert not getter.done()
    clock.advance(0.1)
    assert await asyncio.wait_for(getter, 1) == "a"
    q.done("a")
    clock.advance(30)
    assert len(q) == 0 and await asyncio.wait_for(drain(q), 1) == []


async def test_a_plain_add_wakes_a_worker_waiting_on_a_delayed_key():
    q, _ = queue()
    q.add_after("later", 100)
    getter = asyncio.ensure_future(q.get())
    await loop_turns()
    q.add("now")
    assert await asyncio.wait_for(getter, 1) == "now"


def test_backoff_doubles_per_failure_up_to_the_cap_and_forget_resets_it():
    backoff = ItemBackoff(base=0.005, cap=1.0)
    delays = [backoff.when("a") for _ in range(10)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1.0 and backoff.retries("a") == 10
    assert backoff.when("b") == 0.005
    backoff.forget("a")
    assert backoff.when("a") == 0.005


def test_token_bucket_allows_a_burst_then_spaces_tokens_at_the_rate():
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    clock.advance(10)
    assert bucket.reserve() == 0


async def test_rate_limited_requeues_back_off_per_key():
    clock = FakeClock()
    q = WorkQueue[str](clock, rate_limiter=RequeueRateLimiter(clock, base=1, cap=100))
    for expected_delay in [1, 2, 4]:
        q.add_rate_limited("a")
        getter = asyncio.ensure_future(q.get())
        await loop_turns()
        clock.advance(expected_delay - 0.5)
        await loop_turns()
        assert not getter.done()
        clock.advance(0.5)
        assert await asyncio.wait_for(getter, 1) == "a"
        q.done("a")
    assert q.retries("a") == 3
    q.forget("a")
    assert q.retries("a") == 0


async def test_shutdown_lets_workers_finish_what_is_queued_then_stops_them():
    q, _ = queue()
    q.add("a")
    q.shutdown()
    q.add("b")
    assert await q.get() == "a"
    q.done("a")
    with pytest.raises(ShutDown):
        await q.get()
