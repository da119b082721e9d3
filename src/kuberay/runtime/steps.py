"""Named reconcile steps, so that a failure says where it happened: `reconcile step "pods" failed: ...`.

A reconciler marks each step of its pass with `with step("pods"):` (its body may await). The
controller opens a `Trace` around every reconcile; a step that raises records itself against that exception,
and a step that is cancelled (the per-reconcile timeout) records itself as the step that was running. The
controller then finds the step of whatever the reconcile raised by following the exception's chain
(`raise X from error`), so a reconciler may catch a step's error, finish its pass (write a status), and
raise later without losing the step's name. Steps may nest: the innermost one that failed is named.

Outside a reconcile (a unit test calling a step directly) `step` does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class Trace:
    """What the steps of one reconcile recorded."""

    # (exception, step) for every exception that left a step, innermost step first.
    failures: list[tuple[BaseException, str]] = field(default_factory=list)
    # The innermost step that was running when the reconcile was cancelled.
    cancelled_in: str | None = None

    def step_of(self, error: BaseException) -> str | None:
        """The step `error` (or an exception it was raised from) left, if any."""
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            for failed, name in self.failures:
                if failed is current:
                    return name
            current = current.__cause__ or current.__context__
        return None


_trace: ContextVar[Trace | None] = ContextVar("reconcile_steps", default=None)


@contextlib.contextmanager
def tracing() -> Iterator[Trace]:
    """Opens the trace of one reconcile (the controller does this)."""
    trace = Trace()
    token = _trace.set(trace)
    try:
        yield trace
    finally:
        _trace.reset(token)


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """Marks the block inside as the reconcile step `name`."""
    try:
        yield
    except asyncio.CancelledError:
        trace = _trace.get()
        if trace is not None and trace.cancelled_in is None:
            trace.cancelled_in = name
        raise
    except BaseException as error:
        trace = _trace.get()
        if trace is not None and not any(failed is error for failed, _ in trace.failures):
            trace.failures.append((error, name))
        raise


def describe(trace: Trace, error: BaseException) -> str:
    """The error as the runtime reports it: prefixed with its step when it left one."""
    name = trace.step_of(error)
    return f'reconcile step "{name}" failed: {error}' if name else str(error)
