"""The suite's one way to wait (tests/support/eventually.py), sync and async."""

import asyncio
import itertools

import pytest

from support.eventually import eventually, holds, loop_turns


def test_sync_returns_the_first_truthy_value() -> None:
    counts = itertools.count()
    assert eventually(lambda: next(counts) >= 3 and "done", timeout=5, every=0) == "done"


async def test_async_awaits_an_async_check_and_polls_a_plain_one() -> None:
    counts = itertools.count()

    async def check() -> int:
        return max(next(counts) - 2, 0)

    assert await eventually(check, timeout=5, every=0) == 1
    assert await eventually(lambda: (n := next(counts)) > 6 and [n], timeout=5, every=0) == [7]


async def test_blocking_returns_the_value_where_an_event_loop_runs() -> None:
    counts = itertools.count()
    assert eventually(lambda: next(counts) >= 2 and "started", timeout=5, every=0, blocking=True) == "started"


def test_a_timeout_names_what_was_awaited_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"the pod ready not reached within 0 s; last: \[\]"):
        eventually(list, timeout=0, what="the pod ready")
    with pytest.raises(AssertionError, match=r"described late not reached"):
        eventually(lambda: 0, timeout=0, what=lambda: "described late")


def test_holds_returns_when_the_check_stayed_true_and_names_the_value_that_broke_it() -> None:
    holds(lambda: True, 0, "kept")
    values = iter([1, 1, 0])
    with pytest.raises(AssertionError, match=r"the invariant did not hold for 5 s; it turned 0"):
        holds(lambda: next(values), 5, "the invariant", every=0)


async def test_loop_turns_lets_ready_tasks_run_without_time_passing() -> None:
    steps: list[int] = []

    async def stepper() -> None:
        for step in range(3):
            steps.append(step)
            await asyncio.sleep(0)

    task = asyncio.ensure_future(stepper())
    await loop_turns(2)
    assert steps == [0, 1] and not task.done()
    await loop_turns()
    assert steps == [0, 1, 2] and task.done()
