"""The runtime's own metrics, with controller-runtime's and client-go's names, labels and buckets.

One `RuntimeMetrics` per process, on a `prometheus_client.CollectorRegistry` that the operator serves on
`--metrics-addr` (and on which the controllers register their `kuberay_*` metrics). Controllers get a
`ControllerMetrics` (labels `controller`), work queues a `QueueMetrics` (labels `name`, `controller`).
Gauges that describe a moment (queue depth, unfinished work, longest-running processor) are computed at
scrape time from the queue itself, so they can never drift.

`RestClientMetrics` is client-go's `rest_client_*` set, fed by the API client (`runtime.client`) for every
request it makes; upstream registers all of them unconditionally, so they are on the same registry.
`rest_client_dns_resolution_duration_seconds` is registered but stays without samples: client-go observes
it from its own dialer's DNS lookups, which the Python client does not expose (a series would be invented).

`observe_leader(...)` is client-go's `leader_election_master_status`; `process_collectors` adds the
`process_*` families (the Go runtime's `go_*` have no Python counterpart; Python's own `python_*` come with
them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

RECONCILE_TIME_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip
# prometheus.ExponentialBuckets(10e-9, 10, 12): 1 ns .. 1000 s.
QUEUE_TIME_BUCKETS = tuple(10e-9 * 10**i for i in range(12))
REST_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
REST_DNS_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
REST_SIZE_BUCKETS = tuple(
    float(n) for n in (64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)
)


class ReconcileResult:
    """The `result` label values of controller_runtime_reconcile_total."""

    SUCCESS = "success"
    ERROR = "error"
    REQUEUE = "requeue"
    REQUEUE_AFTER = "requeue_after"


class RuntimeMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        c = ["controller"]
        q = ["name", "controller"]
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            [*c, "result"],
            registry=registry,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            c,
            registry=registry,
        )
        self.terminal_errors = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            c,
            registry=registry,
        )
        self.reconcile_panics = Counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            c,
            registry=registry,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            c,
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            c,
            registry=registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            c,
            registry=registry,
        )
        self.queue_depth = Gauge("workqueue_depth", "Current depth of workqueue", q, registry=registry)
        self.queue_adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", q, registry=registry
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            q,
            buckets=QUEUE_TIME_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            q,
            buckets=QUEUE_TIME_BUCKETS,
            registry=registry,
        )
        self.unfinished_work = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration.",
            q,
            registry=registry,
        )
        self.longest_running = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            q,
            registry=registry,
        )
        self.queue_retries = Counter(
            "workqueue_retries_total",
            "Total number of items added to the workqueue with a non-zero delay",
            q,
            registry=registry,
        )

    def for_controller(self, controller: str) -> ControllerMetrics:
        return ControllerMetrics(self, controller)

    def for_queue(self, name: str) -> QueueMetrics:
        return QueueMetrics(self, name)


@dataclass(frozen=True)
class ControllerMetrics:
    metrics: RuntimeMetrics
    controller: str

    def set_max_concurrent(self, workers: int) -> None:
        self.metrics.max_concurrent.labels(self.controller).set(workers)

    def worker_started(self) -> None:
        self.metrics.active_workers.labels(self.controller).inc()

    def worker_finished(self) -> None:
        self.metrics.active_workers.labels(self.controller).dec()

    def reconciled(self, result: str, seconds: float) -> None:
        self.metrics.reconcile_total.labels(self.controller, result).inc()
        self.metrics.reconcile_time.labels(self.controller).observe(seconds)

    def errored(self, *, terminal: bool) -> None:
        self.metrics.reconcile_errors.labels(self.controller).inc()
        if terminal:
            self.metrics.terminal_errors.labels(self.controller).inc()

    def panicked(self) -> None:
        self.metrics.reconcile_panics.labels(self.controller).inc()


@dataclass(frozen=True)
class QueueMetrics:
    metrics: RuntimeMetrics
    name: str

    def observe(
        self, depth: Callable[[], float], unfinished: Callable[[], float], longest: Callable[[], float]
    ) -> None:
        """Binds the moment gauges to functions of the queue, evaluated at scrape time."""
        labels = (self.name, self.name)
        self.metrics.queue_depth.labels(*labels).set_function(depth)
        self.metrics.unfinished_work.labels(*labels).set_function(unfinished)
        self.metrics.longest_running.labels(*labels).set_function(longest)

    def added(self) -> None:
        self.metrics.queue_adds.labels(self.name, self.name).inc()

    def retried(self) -> None:
        self.metrics.queue_retries.labels(self.name, self.name).inc()

    def started(self, waited_seconds: float) -> None:
        self.metrics.queue_latency.labels(self.name, self.name).observe(waited_seconds)

    def finished(self, worked_seconds: float) -> None:
        self.metrics.work_duration.labels(self.name, self.name).observe(worked_seconds)


def observe_leader(registry: CollectorRegistry, lease: str, leading: Callable[[], bool]) -> None:
    """client-go's `leader_election_master_status{name=<lease>}`: 1 while this process leads, else 0."""
    gauge = Gauge(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
        ["name"],
        registry=registry,
    )
    gauge.labels(lease).set_function(lambda: 1.0 if leading() else 0.0)


def process_collectors(registry: CollectorRegistry) -> None:
    """The process's own families (`process_*`, and Python's `python_*` where Go has `go_*`)."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)


class RestClientMetrics:
    """client-go's API-client metrics: `verb` is the HTTP method, `host` the API server's `host:port`, and
    `code` the response's status code, or `<error>` when no response came."""

    def __init__(self, registry: CollectorRegistry) -> None:
        vh = ["verb", "host"]
        self.requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.request_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            vh,
            buckets=REST_LATENCY_BUCKETS,
            registry=registry,
        )
        self.request_size = Histogram(
            "rest_client_request_size_bytes",
            "Request size in bytes. Broken down by verb and host.",
            vh,
            buckets=REST_SIZE_BUCKETS,
            registry=registry,
        )
        self.response_size = Histogram(
            "rest_client_response_size_bytes",
            "Response size in bytes. Broken down by verb and host.",
            vh,
            buckets=REST_SIZE_BUCKETS,
            registry=registry,
        )
        self.rate_limiter_duration = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            vh,
            buckets=REST_LATENCY_BUCKETS,
            registry=registry,
        )
        self.dns_resolution = Histogram(
            "rest_client_dns_resolution_duration_seconds",
            "DNS resolver latency in seconds. Broken down by host.",
            ["host"],
            buckets=REST_DNS_BUCKETS,
            registry=registry,
        )
        self.retries = Counter(
            "rest_client_request_retries_total",
            "Number of request retries, partitioned by status code, verb, and host.",
            ["code", "verb", "host"],
            registry=registry,
        )
        # Every request touches four or five series; their children are kept here, as a dict lookup costs
        # a fraction of `labels()` (which converts, validates and locks on each call).
        self._children: dict[tuple[object, ...], Any] = {}

    def _child(self, metric: Counter | Histogram, *values: str) -> Any:
        key = (metric, *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def throttled(self, verb: str, host: str, seconds: float) -> None:
        """The wait for a token of the client's rate limiter (observed for every request, zero included)."""
        self._child(self.rate_limiter_duration, verb, host).observe(seconds)

    def attempted(self, verb: str, host: str, status: int | None, request_bytes: int) -> None:
        """One attempt on the wire: its outcome and the size of the body sent (0 without one)."""
        self._child(self.requests, "<error>" if status is None else str(status), verb, host).inc()
        self._child(self.request_size, verb, host).observe(request_bytes)

    def retried(self, verb: str, host: str, status: int) -> None:
        """An attempt after the first, by the status code it got."""
        self._child(self.retries, str(status), verb, host).inc()

    def finished(self, verb: str, host: str, seconds: float) -> None:
        """A whole request, rate-limiter wait included, however it ended."""
        self._child(self.request_duration, verb, host).observe(seconds)

    def received(self, verb: str, host: str, response_bytes: int) -> None:
        self._child(self.response_size, verb, host).observe(response_bytes)
