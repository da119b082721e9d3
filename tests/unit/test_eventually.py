"""The suite's one way to wait (tests/support/eventually.py), sync and async."""

import itertools

import pytest

from support.eventually import eventually


def test_sync_returns_the_first_truthy_value() -> None:
    counts = itertools.count()
    assert eventually(lambda: next(counts) >= 3 and "done", timeout=5, every=0) == "done"


async def test_async_awaits_an_async_check_and_polls_a_plain_one() -> None:
    counts = itertools.count()

    async def check() -> int:
        return max(next(counts) - 2, 0)

    assert await eventually(check, timeout=5, every=0) == 1
    assert await eventually(lambda: (n := next(counts)) > 6 and [n], timeout=5, every=0) == [7]


def test_a_timeout_names_what_was_awaited_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"the pod ready not reached within 0 s; last: \[\]"):
        eventually(list, timeout=0, what="the pod ready")
    with pytest.raises(AssertionError, match=r"described late not reached"):
        eventually(lambda: 0, timeout=0, what=lambda: "described late")
