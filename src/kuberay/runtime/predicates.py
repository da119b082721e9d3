"""Event filters for watches, after controller-runtime's `predicate` package.

A predicate sees an informer `Event` and says whether it should enqueue anything. Only updates are
filtered: ADDED and DELETED always pass, as in controller-runtime, and so does RESYNC unless the predicate
says otherwise (a resync's old and new objects are the same, so the "changed" predicates drop it, as
controller-runtime's do on a periodic resync).
"""

from __future__ import annotations

from collections.abc import Callable

from kuberay.runtime.controller import Predicate
from kuberay.runtime.informer import Event, EventType


def _on_update(changed: Callable[[Event], bool]) -> Predicate:
    def predicate(event: Event) -> bool:
        if event.type in (EventType.MODIFIED, EventType.RESYNC) and event.old is not None:
            return changed(event)
        return True

    return predicate


def _metadata_field_changed(field: str) -> Predicate:
    return _on_update(
        lambda e: e.old is not None and e.old["metadata"].get(field) != e.obj["metadata"].get(field)
    )


generation_changed: Predicate = _metadata_field_changed("generation")
labels_changed: Predicate = _metadata_field_changed("labels")
annotations_changed: Predicate = _metadata_field_changed("annotations")


def any_of(*predicates: Predicate) -> Predicate:
    return lambda event: any(p(event) for p in predicates)
