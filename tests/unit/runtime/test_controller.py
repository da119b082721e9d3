import asyncio
import logging

import pytest
from prometheus_client import CollectorRegistry

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.cache import prepare
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.controller import Controller, Result, TemporaryError, TerminalError
from kuberay.runtime.informer import Event, EventType
from kuberay.runtime.logcontext import ReconcileContextFilter
from kuberay.runtime.metrics import RuntimeMetrics
from kuberay.runtime.ratelimit import RequeueRateLimiter
from kuberay.runtime.resources import POD, ObjectKey
from kuberay.runtime.steps import step
from support.eventually import loop_turns

KEY = ObjectKey("ns", "c")


def controller(outcome) -> tuple[Controller, CollectorRegistry, FakeClock]:
    clock, registry = FakeClock(), CollectorRegistry()

    async def reconcile(key: ObjectKey) -> Result:
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    c = Controller("toy", reconcile, clock=clock, rate_limiter=RequeueRateLimiter(clock, base=1, cap=100))
    c.bind_metrics(RuntimeMetrics(registry))
    return c, registry, clock


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, {"controller": "toy", **labels}) or 0.0


@pytest.mark.parametrize(
    ("outcome", "result", "requeued_after", "panics"),
    [
        (Result(), "success", None, 0),
        (Result(requeue_after=30), "requeue_after", 30, 0),
        (Result(requeue=True), "requeue", 1, 0),
        (TemporaryError("later"), "error", 1, 0),
        (errors.ConflictError("stale"), "error", 1, 0),
        (KeyError("bug"), "error", 1, 1),
        (TerminalError("never"), "error", None, 0),
    ],
)
async def test_reconcile_outcomes_are_counted_and_requeued(outcome, result, requeued_after, panics):
    c, registry, clock = controller(outcome)
    await c._process(KEY)
    assert sample(registry, "controller_runtime_reconcile_total", result=result) == 1
    assert sample(registry, "controller_runtime_reconcile_panics_total") == panics
    terminal = isinstance(outcome, TerminalError)
    assert sample(registry, "controller_runtime_terminal_reconcile_errors_total") == terminal
    if requeued_after is None:
        clock.advance(1000)
        assert len(c.queue) == 0
    else:
        clock.advance(requeued_after - 0.01)
        getter = asyncio.ensure_future(c.queue.get())
        await loop_turns()
        assert not getter.done()
        clock.advance(0.01)
        assert await asyncio.wait_for(getter, 1) == KEY


async def test_log_lines_inside_a_reconcile_carry_its_context(caplog):
    async def reconcile(key: ObjectKey) -> Result:
        logging.getLogger("anywhere").info("working")
        return Result()

    c = Controller("toy", reconcile)
    caplog.handler.addFilter(ReconcileContextFilter())
    with caplog.at_level(logging.INFO):
        await c._process(KEY)
        await c._process(KEY)
    seen = [
        (r.reconcile_controller, r.reconcile_namespace, r.reconcile_name, r.reconcile_id)
        for r in caplog.records
        if r.name == "anywhere"
    ]
    assert [s[:3] for s in seen] == [("toy", "ns", "c")] * 2
    assert seen[0][3] and seen[0][3] != seen[1][3]


def test_owned_objects_enqueue_their_controlling_owner_of_the_for_kind():
    c = Controller("toy", lambda key: None).for_(RAYCLUSTER).owns(POD)  # type: ignore[arg-type,return-value]
    owned = c.handler(c.sources[1])
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": "c",
                    "uid": "u",
                    "controller": True,
                },
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "v", "controller": False},
            ],
        }
    }
    owned(Event(EventType.ADDED, prepare(pod)))
    orphan = {"metadata": {"name": "q", "namespace": "ns"}}
    owned(Event(EventType.ADDED, prepare(orphan)))
    assert len(c.queue) == 1


async def requeued_with_backoff(c: Controller, clock: FakeClock) -> bool:
    clock.advance(1)  # the rate limiter's base delay
    getter = asyncio.ensure_future(c.queue.get())
    try:
        return await asyncio.wait_for(getter, 1) == KEY
    except TimeoutError:
        return False


async def test_a_reconcile_that_outlives_its_timeout_is_cancelled_named_and_retried(caplog):
    clock, registry = FakeClock(), CollectorRegistry()
    cancelled = asyncio.Event()

    async def reconcile(key: ObjectKey) -> Result:
        with step("services"):
            pass
        with step("pods"):
            try:
                await asyncio.Event().wait()  # an API call that never answers
            except asyncio.CancelledError:
                cancelled.set()
                raise
        return Result()

    c = Controller("toy", reconcile, clock=clock, timeout=0.05,
                   rate_limiter=RequeueRateLimiter(clock, base=1, cap=100))  # fmt: skip
    c.bind_metrics(RuntimeMetrics(registry))
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(c._process(KEY), 10)
    assert cancelled.is_set()
    assert 'Reconciler error: reconcile step "pods" timed out after 0.05s' in caplog.messages
    assert sample(registry, "controller_runtime_reconcile_total", result="error") == 1
    assert sample(registry, "controller_runtime_reconcile_panics_total") == 0
    assert await requeued_with_backoff(c, clock)


async def test_the_failing_step_is_named_even_when_the_reconciler_raises_later(caplog):
    clock = FakeClock()

    async def reconcile(key: ObjectKey) -> Result:
        failure = None
        with step("head"):
            pass
        try:
            with step("pods"), step("worker-group"):
                raise errors.ConflictError("stale")
        except errors.KubeError as e:
            failure = e
        with step("status"):
            pass  # the status is written whatever the pods step did, then the error is raised
        raise TemporaryError(str(failure)) from failure

    c = Controller("toy", reconcile, clock=clock, rate_limiter=RequeueRateLimiter(clock, base=1, cap=100))
    with caplog.at_level(logging.WARNING):
        await c._process(KEY)
    assert caplog.messages == ['Reconciler error: reconcile step "worker-group" failed: stale']
    assert await requeued_with_backoff(c, clock)


async def test_a_bug_inside_a_step_is_named_and_counted_as_a_panic(caplog):
    registry = CollectorRegistry()

    async def reconcile(key: ObjectKey) -> Result:
        with step("pods"):
            raise KeyError("spec")

    c = Controller("toy", reconcile)
    c.bind_metrics(RuntimeMetrics(registry))
    with caplog.at_level(logging.WARNING):
        await c._process(KEY)
    assert caplog.messages == ["Reconciler error (unexpected): reconcile step \"pods\" failed: 'spec'"]
    assert caplog.records[0].exc_info is not None
    assert sample(registry, "controller_runtime_reconcile_panics_total") == 1


async def test_an_unnamed_failure_and_a_timeout_outside_steps_are_reported_plainly(caplog):
    async def stuck(key: ObjectKey) -> Result:
        await asyncio.Event().wait()
        return Result()

    async def broken(key: ObjectKey) -> Result:
        raise TemporaryError("no step here")

    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(Controller("toy", stuck, timeout=0.05)._process(KEY), 10)
        await Controller("toy", broken)._process(KEY)
    assert caplog.messages == [
        "Reconciler error: reconcile timed out after 0.05s",
        "Reconciler error: no step here",
    ]


def test_a_timeout_must_be_positive():
    with pytest.raises(ValueError, match="timeout must be positive"):
        Controller("toy", lambda key: None, timeout=0)  # type: ignore[arg-type,return-value]
