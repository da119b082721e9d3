"""A controller: what it watches, its work queue, its workers, and the reconcile contract.

The contract (controller-runtime's): `async def reconcile(key: ObjectKey) -> Result`.
- Return `Result()` when the object is settled: the key's backoff is forgotten.
- Return `Result(requeue_after=s)` to be called again in `s` seconds (a TTL, a poll).
- Return `Result(requeue=True)`, raise `TemporaryError`, or raise any other exception to be retried with the
  key's exponential backoff (any exception that is neither a `TemporaryError` nor an API error is also
  counted as a panic: it is a bug).
- Raise `TerminalError` when retrying cannot help (the reconciler has already recorded a condition and an
  Event): counted, logged, not retried until the object changes again.

Each reconcile runs under the controller's `timeout` (the operator's `--reconcile-timeout`; None: no
limit): one that outlives it is cancelled, logged as a timeout and retried with backoff, so a call that
never answers cannot hold a worker forever. A reconciler may name the steps of its pass
(`kuberay.runtime.steps.step`); an error or a timeout inside one is reported with its name
(`reconcile step "pods" failed: ...`) in the log line of the failure that sends the key to backoff. A
timeout is also recorded as a Warning Event `ReconcileTimeout` on the object (when the manager has an
Event recorder): no reconciler code runs after the cancellation to say it failed.

Events become keys through the watches: `for_(resource)` enqueues the object itself, `owns(resource)`
enqueues the controlling owner of the `for_` kind (ownerReference with `controller: true`), and
`watches(resource, mapper)` enqueues whatever keys `mapper` returns. A predicate may drop events first.
The runtime, not the reconciler, counts, times, logs and recovers; each reconcile runs with its own
reconcile id in the log context.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from kuberay.runtime import errors, logcontext, steps
from kuberay.runtime.cache import CachedObject, Store
from kuberay.runtime.clock import Clock, SystemClock
from kuberay.runtime.events import WARNING, EventRecorder
from kuberay.runtime.informer import Event, EventType
from kuberay.runtime.metrics import ControllerMetrics, ReconcileResult, RuntimeMetrics
from kuberay.runtime.ratelimit import RequeueRateLimiter
from kuberay.runtime.resources import ObjectKey, Resource
from kuberay.runtime.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

RECONCILE_TIMEOUT_REASON = "ReconcileTimeout"


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None
    requeue: bool = False


class TemporaryError(errors.ControllerRuntimeError):
    """Retry this key with backoff."""


class TerminalError(errors.ControllerRuntimeError):
    """Retrying this key cannot help until the object changes."""


Reconcile = Callable[[ObjectKey], Awaitable[Result]]
Predicate = Callable[[Event], bool]
Mapper = Callable[[CachedObject], Iterable[ObjectKey]]


@dataclass(frozen=True)
class Watch:
    resource: Resource
    mapper: Mapper
    predicate: Predicate | None = None


def _self_key(obj: CachedObject) -> Iterable[ObjectKey]:
    return (ObjectKey.of(obj),)


def controller_owner(owner: Resource) -> Mapper:
    """Maps an object to the key of its controlling owner of kind `owner` (same namespace), if any."""

    def owners(obj: CachedObject) -> Iterable[ObjectKey]:
        metadata = obj["metadata"]
        for ref in metadata.get("ownerReferences") or ():
            if (
                ref.get("controller")
                and ref.get("kind") == owner.kind
                and ref.get("apiVersion", "").rpartition("/")[0] == owner.group
            ):
                return (ObjectKey(metadata.get("namespace") or "", ref["name"]),)
        return ()

    return owners


@dataclass
class Controller:
    name: str
    reconcile: Reconcile
    concurrency: int = 1
    clock: Clock = field(default_factory=SystemClock)
    rate_limiter: RequeueRateLimiter | None = None
    # Seconds one reconcile may run before it is cancelled and retried; None: no limit.
    timeout: float | None = None
    sources: list[Watch] = field(init=False, default_factory=list)
    _for: Resource | None = field(init=False, default=None)
    queue: WorkQueue[ObjectKey] = field(init=False)
    _metrics: ControllerMetrics | None = field(init=False, default=None)
    _events: tuple[EventRecorder, Store] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(
                f"controller {self.name}: concurrency must be at least 1, got {self.concurrency}"
            )
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"controller {self.name}: timeout must be positive, got {self.timeout}")
        self.queue = WorkQueue(self.clock, rate_limiter=self.rate_limiter)

    def for_(self, resource: Resource, predicate: Predicate | None = None) -> Controller:
        self._for = resource
        self.sources.append(Watch(resource, _self_key, predicate))
        return self

    def owns(self, resource: Resource, predicate: Predicate | None = None) -> Controller:
        if self._for is None:
            raise ValueError(f"controller {self.name}: call for_() before owns()")
        self.sources.append(Watch(resource, controller_owner(self._for), predicate))
        return self

    def watches(self, resource: Resource, mapper: Mapper, predicate: Predicate | None = None) -> Controller:
        self.sources.append(Watch(resource, mapper, predicate))
        return self

    @property
    def primary(self) -> Resource | None:
        """The kind this controller reconciles (set by `for_`)."""
        return self._for

    def bind_events(self, recorder: EventRecorder, objects: Store) -> None:
        """Lets timeouts be recorded as Events on the reconciled objects, found in `objects` (called by the
        manager before it runs)."""
        self._events = (recorder, objects)

    def bind_metrics(self, metrics: RuntimeMetrics) -> None:
        """Publishes this controller's and its queue's metrics (called by the manager before it runs)."""
        self._metrics = metrics.for_controller(self.name)
        self.queue.publish(metrics.for_queue(self.name))

    def handler(self, watch: Watch) -> Callable[[Event], None]:
        """The informer handler of one watch: filter, map to keys, enqueue."""

        def handle(event: Event) -> None:
            if watch.predicate is not None and not watch.predicate(event):
                return
            keys = set(watch.mapper(event.obj))
            if event.type is EventType.MODIFIED and event.old is not None:
                keys.update(watch.mapper(event.old))  # an owner that was removed still hears of it
            for key in keys:
                self.queue.add(key)

        return handle

    async def run(self) -> None:
        """Runs the workers until the queue is shut down and drained of keys in flight."""
        if self._metrics is not None:
            self._metrics.set_max_concurrent(self.concurrency)
        async with asyncio.TaskGroup() as workers:
            for _ in range(self.concurrency):
                workers.create_task(self._worker())

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self._process(key)
            finally:
                self.queue.done(key)

    async def _process(self, key: ObjectKey) -> None:
        token = logcontext.current.set(
            logcontext.ReconcileContext(self.name, key.namespace, key.name, str(uuid.uuid4()))
        )
        metrics = self._metrics
        if metrics is not None:
            metrics.worker_started()
        started = time.perf_counter()
        try:
            outcome = await self._outcome(key)
        finally:
            if metrics is not None:
                metrics.worker_finished()
            logcontext.current.reset(token)
        if metrics is not None:
            metrics.reconciled(outcome, time.perf_counter() - started)

    async def _outcome(self, key: ObjectKey) -> str:
        with steps.tracing() as trace:
            try:
                async with asyncio.timeout(self.timeout) as deadline:
                    result = await self.reconcile(key)
            except asyncio.CancelledError:
                raise
            except TimeoutError as e:
                if not deadline.expired():
                    return self._failed(key, steps.describe(trace, e), e)
                where = f'reconcile step "{trace.cancelled_in}"' if trace.cancelled_in else "reconcile"
                message = f"{where} timed out after {self.timeout:g}s"
                self._record_timeout(key, message)
                return self._failed(key, message, None)
            except Exception as e:
                return self._failed(key, steps.describe(trace, e), e)
        if result.requeue_after is not None and result.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
            return ReconcileResult.REQUEUE_AFTER
        if result.requeue:
            self.queue.add_rate_limited(key)
            return ReconcileResult.REQUEUE
        self.queue.forget(key)
        return ReconcileResult.SUCCESS

    def _failed(self, key: ObjectKey, message: str, error: Exception | None) -> str:
        """Logs a failed reconcile (`message` names its step) and backs off, unless it is terminal."""
        if isinstance(error, TerminalError):
            log.error("Reconciler error (terminal, not retried): %s", message)
            self._errored(terminal=True)
            self.queue.forget(key)
            return ReconcileResult.ERROR
        if error is None or isinstance(error, (TemporaryError, errors.KubeError)):
            log.warning("Reconciler error: %s", message)
        else:
            log.error("Reconciler error (unexpected): %s", message, exc_info=error)
            if self._metrics is not None:
                self._metrics.panicked()
        self._errored(terminal=False)
        self.queue.add_rate_limited(key)
        return ReconcileResult.ERROR

    def _record_timeout(self, key: ObjectKey, message: str) -> None:
        if self._events is None:
            return
        recorder, objects = self._events
        obj = objects.get(key)
        if obj is not None:
            recorder.record(obj, WARNING, RECONCILE_TIMEOUT_REASON, message, "Reconcile")

    def _errored(self, *, terminal: bool) -> None:
        if self._metrics is not None:
            self._metrics.errored(terminal=terminal)
