"""The set of controllers that makes localkube a cluster rather than an API server alone."""

from __future__ import annotations

from localkube.controllers.api import ControllerApi
from localkube.controllers.endpoints import EndpointsController
from localkube.controllers.garbagecollector import GarbageCollector
from localkube.controllers.job import JobController
from localkube.controllers.runner import Runner
from localkube.controllers.scheduler import Scheduler
from localkube.node.kubelet import NodeOptions, SimulatedKubelet
from localkube.server.rest import Resources


def cluster_controllers(resources: Resources, node: NodeOptions) -> Runner:
    """Registers the node and returns the runner of every in-process controller (not yet started)."""
    store = resources.store
    api = ControllerApi(resources)
    kubelet = SimulatedKubelet(store, node)
    kubelet.register(lambda node_object: api.create("", "nodes", None, node_object))
    return Runner(
        store,
        [
            Scheduler(store),
            kubelet,
            JobController(store, api),
            GarbageCollector(store, api),
            EndpointsController(store, api),
        ],
    )
