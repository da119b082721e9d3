"""Installing the node event forwarder into a manager.

The operator has no switch of its own for it (upstream's chart's `nodeEventForwarder.enabled` only decides
whether the lists reach the operator): it runs when any of `nodeEventForwarderSources`, `...Reasons`,
`...Types` (or their flags) is set, so that an operator installed without them watches no Events at all.

It watches core/v1 Events field-selected on involvedObject.kind=Node (the API server keeps the rest off the
wire) in the watched namespaces: a Node's Events are usually in `default`, which a `--watch-namespace` that
leaves it out does not see. The Event informer is its own: no other controller reads Events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from kuberay.api.settings import OperatorSettings
from kuberay.controllers.nodeevents.reconciler import NODE_NAME_INDEX, NodeEventForwarder, node_name_index
from kuberay.controllers.nodeevents.selection import EventFilter
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.cache import CachedObject
from kuberay.runtime.controller import Controller
from kuberay.runtime.informer import Event
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import EVENT, POD, ObjectKey

CONTROLLER_NAME = "node-event-forwarder"
# The reporting controller of the forwarded events.k8s.io Events, upstream's.
EVENT_SOURCE = "kuberay-node-event-forwarder"
NODE_EVENTS = "involvedObject.kind=Node"


def _own_key(obj: CachedObject) -> Iterable[ObjectKey]:
    return (ObjectKey(obj["metadata"].get("namespace") or "", obj["metadata"]["name"]),)


def event_filter(settings: OperatorSettings) -> EventFilter:
    config = settings.config
    return EventFilter.of(
        config.node_event_forwarder_sources,
        config.node_event_forwarder_reasons,
        config.node_event_forwarder_types,
    )


def enabled(settings: OperatorSettings) -> bool:
    return event_filter(settings).configured


def install(manager: Manager, settings: OperatorSettings) -> NodeEventForwarder:
    """Adds the node event forwarder to `manager`."""
    selected = event_filter(settings)
    informer = manager.informer(EVENT)
    # Set before the manager starts the informer: its first list already carries the selector.
    informer.field_selector = NODE_EVENTS
    pods = manager.cache(POD)
    with contextlib.suppress(ValueError):  # another controller indexed the shared Pod cache already
        pods.add_index(NODE_NAME_INDEX, node_name_index)
    recorder = manager.recorder.for_controller(EVENT_SOURCE) if manager.recorder is not None else None
    forwarder = NodeEventForwarder(
        informer.store, pods, manager.cache(RAYCLUSTER), recorder, selected, manager.clock
    )

    def forwardable(event: Event) -> bool:
        # A deleted Event that matched comes through too: its record of what was forwarded is dropped.
        return selected.matches(event.obj)

    controller = Controller(
        CONTROLLER_NAME,
        forwarder.reconcile,
        concurrency=settings.config.reconcile_concurrency,
        clock=manager.clock,
        timeout=settings.runtime.reconcile_timeout,
    )
    # A watch, not `for_`: the runtime records a reconcile's timeout on its primary object, and an Event
    # about an Event would help nobody.
    manager.add(controller.watches(EVENT, _own_key, forwardable))
    return forwarder
