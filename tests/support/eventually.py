"""Waiting in a test: `eventually(check)` calls `check` until it returns something truthy, and returns that.

One helper for synchronous and asynchronous tests. In a thread where an event loop runs (an `async def`
test, a fixture, a harness method), `eventually` returns a coroutine to await: it polls with
`asyncio.sleep`, so the controllers, stores and servers on that loop go on while the test waits, and
`check` may be a plain function or an `async def` (its result is awaited). Elsewhere it polls with
`time.sleep` and returns the value itself.

`timeout` bounds the wait and is never a measurement: when it is over, the AssertionError names `what` (a
text, or a function called then, to describe the state it found) and the last value `check` returned.
`blocking=True` is for a plain function that callers of both kinds call (a helper that starts a process, as
`LocalKubeProcess.start`): it polls with `time.sleep` and returns the value even where an event loop runs,
holding up that loop as any blocking call does.

`every` is the period: checks that start a process (kubectl) poll less often than checks of memory. A check
may raise to stop the wait at once (a process it waits on has exited): the exception goes to the caller.

Two other ways to wait, each with its own meaning: `holds(check, duration)` asserts that `check` stays
truthy for a while (nothing undoes what was reached), and `loop_turns(n)` lets the tasks of the running event
loop take `n` turns, for a test that drives time itself (a fake clock) and must not wait on the real one.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

What = str | Callable[[], str]


def eventually(
    check: Callable[[], Any],
    timeout: float = 60.0,
    what: What = "",
    every: float = 0.1,
    *,
    blocking: bool = False,
) -> Any:
    """The first truthy value of `check()` (see the module docstring); an awaitable within an event loop,
    unless `blocking`."""
    deadline = time.monotonic() + timeout
    if not blocking and _in_event_loop():
        return _eventually(check, deadline, timeout, what or _name(check), every)
    value = check()
    while not value:
        _give_up_after(deadline, timeout, what or _name(check), value)
        time.sleep(every)
        value = check()
    return value


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _eventually(
    check: Callable[[], Any], deadline: float, timeout: float, what: What, every: float
) -> Any:
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        _give_up_after(deadline, timeout, what, value)
        await asyncio.sleep(every)


def _name(check: Callable[[], Any]) -> str:
    return str(getattr(check, "__name__", check))


def _give_up_after(deadline: float, timeout: float, what: What, value: Any) -> None:
    if time.monotonic() < deadline:
        return
    described = what() if callable(what) else what
    raise AssertionError(f"{described} not reached within {timeout} s; last: {value!r}")


def holds(check: Callable[[], Any], duration: float, what: What = "", every: float = 1.0) -> None:
    """Asserts that `check()` is truthy at each period of `duration` seconds, the first time now."""
    deadline = time.monotonic() + duration
    while True:
        value = check()
        if not value:
            described = what() if callable(what) else what or _name(check)
            raise AssertionError(f"{described} did not hold for {duration} s; it turned {value!r}")
        if time.monotonic() >= deadline:
            return
        time.sleep(every)


async def loop_turns(turns: int = 10) -> None:
    """Lets every ready task of the running loop run, `turns` times over; no time passes on a fake clock."""
    for _ in range(turns):
        await asyncio.sleep(0)
