"""Warnings for ray.io objects that no controller of this operator handles.

Every ray.io kind is installed as a CRD, so the API server accepts a RayService or a RayCronJob even
while no controller acts on it (its controller not written yet, or behind a feature gate that is off).
Silence would look like a hang; instead, for each ray.io kind that no installed controller reconciles
(known from the manager: the `for_` kind of each controller added before this one), a light watcher
records one Warning Event `NoController` per object generation, so `kubectl describe` says why nothing
happens. It is installed after every other controller and does nothing else: once an operator runs a
controller for the kind, it is not installed for it.
"""

from __future__ import annotations

import logging

from kuberay.api import crd
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.settings import OperatorSettings
from kuberay.runtime.cache import Store
from kuberay.runtime.controller import Controller, Result
from kuberay.runtime.events import WARNING, EventRecorder
from kuberay.runtime.informer import Event, EventType
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import ObjectKey, Resource

log = logging.getLogger(__name__)

REASON = "NoController"


def ray_resources() -> list[Resource]:
    """Every ray.io kind, at its storage version."""
    return [
        Resource(f"{crd.GROUP}/{next(v.name for v in kind.versions if v.storage)}", kind.kind, kind.plural)
        for kind in crd.KINDS
    ]


def message(kind: str, gates: FeatureGates) -> str:
    """Names the feature gate when the kind has one of its own (upstream names gates after their kinds)
    and it is off."""
    gate = next((feature for feature in Feature if feature.value == kind), None)
    why = (
        f"its feature gate is off (start the operator with --feature-gates {kind}=true)"
        if gate is not None and not gates.enabled(gate)
        else "this operator runs no controller for it"
    )
    return f"No controller handles {kind} objects: {why}. The object is stored, but nothing acts on it."


def _new_generation(event: Event) -> bool:
    if event.type is not EventType.MODIFIED or event.old is None:
        return True
    return bool(event.old["metadata"].get("generation") != event.obj["metadata"].get("generation"))


class UnhandledWarner:
    """Records the Warning once per (object, generation); remembers only what it has warned about."""

    def __init__(self, message: str, objects: Store, recorder: EventRecorder | None) -> None:
        self.message, self.objects, self.recorder = message, objects, recorder
        self._warned: dict[str, object] = {}  # uid -> generation

    async def reconcile(self, key: ObjectKey) -> Result:
        obj = self.objects.get(key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return Result()
        uid, generation = obj["metadata"].get("uid", ""), obj["metadata"].get("generation")
        if self._warned.get(uid) == generation:
            return Result()
        self._warned[uid] = generation
        if self.recorder is not None:
            self.recorder.record(obj, WARNING, REASON, self.message)
        return Result()

    def forget(self, event: Event) -> bool:
        """A predicate that drops a deleted object's memory (and the event)."""
        if event.type is EventType.DELETED:
            self._warned.pop(event.obj["metadata"].get("uid", ""), None)
            return False
        return _new_generation(event)


def install(manager: Manager, settings: OperatorSettings) -> None:
    """Adds a watcher for every ray.io kind no controller added so far reconciles."""
    handled = {controller.primary.kind for controller in manager.controllers if controller.primary}
    kinds = []
    for resource in ray_resources():
        if resource.kind in handled:
            continue
        warner = UnhandledWarner(
            message(resource.kind, settings.feature_gates), manager.cache(resource), manager.recorder
        )
        controller = Controller(f"unhandled-{resource.kind.lower()}", warner.reconcile, clock=manager.clock)
        manager.add(controller.for_(resource, warner.forget))
        kinds.append(resource.kind)
    if kinds:
        log.info("no controller handles %s: their objects get a Warning Event %s", ", ".join(kinds), REASON)
