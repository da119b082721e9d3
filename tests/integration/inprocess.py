"""The operator's controllers in this process against a localkube, for the controllers' integration tests:
a manager over fresh namespaces with an Event recorder and a metrics registry, the RayCluster controller
and the one under test installed, run until the block ends; and the test-side wait.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from prometheus_client import CollectorRegistry

from integration.runtime.kube import client_for, new_namespace
from kuberay.api.config import Configuration
from kuberay.api.features import FeatureGates
from kuberay.api.settings import Environment, OperatorSettings
from kuberay.controllers.raycluster import setup as raycluster_setup
from kuberay.operator.registry import CACHE_SELECTORS
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock, SystemClock
from kuberay.runtime.events import EventRecorder
from kuberay.runtime.manager import Manager
from kuberay.runtime.metrics import RuntimeMetrics

R = TypeVar("R")


@dataclass
class Running(Generic[R]):
    client: Client
    namespaces: list[str]
    manager: Manager
    reconciler: R
    registry: CollectorRegistry
    recorder: EventRecorder


@contextlib.asynccontextmanager
async def running_operator(
    localkube: Any,
    install: Callable[[Manager, OperatorSettings], R],
    *,
    namespaces: int = 1,
    environ: Mapping[str, str] | None = None,
    gates: FeatureGates | None = None,
    clock: Clock | None = None,
    **config: Any,
) -> AsyncIterator[Running[R]]:
    """The RayCluster controller and `install`'s controller (its reconciler returned) in one manager, its
    caches synced; `config` are the operator's flags; `clock` (a FakeClock, say) drives its time."""
    client = client_for(localkube)
    names = [await new_namespace(client) for _ in range(namespaces)]
    registry = CollectorRegistry()
    clock = clock or SystemClock()
    recorder = EventRecorder(client, component="kuberay-operator", instance="test", clock=clock)
    manager = Manager(client, RuntimeMetrics(registry), namespaces=names, selectors=CACHE_SELECTORS,
                      recorder=recorder, clock=clock)  # fmt: skip
    settings = OperatorSettings(
        config=Configuration(enable_metrics=True, **config),
        feature_gates=gates or FeatureGates(),
        environment=Environment.from_mapping(environ or {}),
        kubeconfig=str(localkube.kubeconfig),
    )
    raycluster_setup.install(manager, settings)
    reconciler = install(manager, settings)
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    try:
        await asyncio.wait_for(manager.wait_synced(), 30)
        yield Running(client, names, manager, reconciler, registry, recorder)
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await client.close()
