"""The set of controllers that makes localkube a cluster rather than an API server alone.

The node agent is chosen by `node_mode`: `simulate` (the default; pods move through a simulated lifecycle)
or `process` (containers run as local processes, logs under `<data_dir>/pods`); with no node of its own
(`node` None) the pods wait for a node attached over HTTP (`localkube agent`). The returned runner's
`stop()` also shuts the node agent down, so in process mode no process or network namespace outlives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from localkube.controllers.api import ControllerApi
from localkube.controllers.daemonset import DaemonSetController
from localkube.controllers.deployment import DeploymentController
from localkube.controllers.endpoints import EndpointsController
from localkube.controllers.garbagecollector import GarbageCollector
from localkube.controllers.job import JobController
from localkube.controllers.namespaces import NamespaceFinalizer
from localkube.controllers.replicaset import ReplicaSetController
from localkube.controllers.resourcequota import ResourceQuotaController
from localkube.controllers.rootca import RootCAPublisher
from localkube.controllers.runner import Controller, Runner
from localkube.controllers.scheduler import DEFAULT_SCHEDULER, Scheduler
from localkube.controllers.serviceaccounts import ServiceAccountController
from localkube.controllers.statefulset import StatefulSetController
from localkube.node.apiaccess import ApiAccess
from localkube.node.kubelet import NodeOptions, SimulatedKubelet
from localkube.node.process import ProcessKubelet, ProcessOptions
from localkube.server.binding import Binder
from localkube.server.rest import Resources
from localkube.storage import Store

NodeMode = Literal["simulate", "process"]
NODE_MODES: tuple[NodeMode, ...] = ("simulate", "process")


class ClusterRunner(Runner):
    """The controllers' runner; stopping it also stops the processes of a process-mode node."""

    def __init__(
        self, store: Store, controllers: Iterable[Controller], kubelet: ProcessKubelet | None
    ) -> None:
        super().__init__(store, controllers)
        self.kubelet = kubelet

    async def stop(self) -> None:
        await super().stop()
        if self.kubelet is not None:
            await self.kubelet.shutdown()


def cluster_controllers(
    resources: Resources,
    node: NodeOptions | None,
    *,
    node_mode: NodeMode = "simulate",
    data_dir: Path | None = None,
    api_access: ApiAccess | None = None,
    schedulers: Iterable[str] = (DEFAULT_SCHEDULER,),
    image_entrypoints: Mapping[str, tuple[str, ...]] | None = None,
    binder: Binder | None = None,
) -> ClusterRunner:
    """Registers the node and returns the runner of every in-process controller (not yet started).

    `data_dir` is required in process mode (container logs live under it); `api_access` is the API server as a
    process-mode node's pods reach it (without, pods get no service-account credentials); `schedulers` are the
    `spec.schedulerName`s localkube's scheduler stands in for; `image_entrypoints` what a process-mode
    container without a command runs, by image; `binder` the API server's pods/binding, which the scheduler
    binds through (its admission webhooks included)."""
    store = resources.store
    api = ControllerApi(resources)
    kubelet: SimulatedKubelet | ProcessKubelet | None
    if node is None:
        kubelet = None
    elif node_mode == "process":
        if data_dir is None:
            raise ValueError("node_mode 'process' needs a data directory for container logs")
        kubelet = ProcessKubelet(
            store,
            node,
            ProcessOptions(
                data_dir=data_dir, api=api_access, image_entrypoints=dict(image_entrypoints or {})
            ),
        )
    elif node_mode == "simulate":
        kubelet = SimulatedKubelet(store, node)
    else:
        raise ValueError(
            f"node_mode: unsupported value {node_mode!r}: expected one of {', '.join(NODE_MODES)}"
        )
    if kubelet is not None:
        kubelet.register(lambda node_object: api.create("", "nodes", None, node_object))
    return ClusterRunner(
        store,
        [
            Scheduler(store, schedulers, binder),
            *([kubelet] if kubelet is not None else []),
            JobController(store, api),
            DeploymentController(store, api),
            ReplicaSetController(store, api),
            StatefulSetController(store, api),
            DaemonSetController(store, api),
            GarbageCollector(store, api),
            NamespaceFinalizer(api),
            EndpointsController(store, api),
            ServiceAccountController(store, api),
            ResourceQuotaController(store, api, resources.registry),
            # The CA is known only where the server's address is (pods reach it with it).
            *([RootCAPublisher(store, api, api_access.ca_cert)] if api_access is not None else []),
        ],
        kubelet if isinstance(kubelet, ProcessKubelet) else None,
    )
