from kuberay.runtime.cache import prepare
from kuberay.runtime.informer import Event, EventType
from kuberay.runtime.predicates import annotations_changed, any_of, generation_changed, labels_changed


def obj(generation: int = 1, labels: dict | None = None, status: str = "") -> dict:
    return prepare(
        {"metadata": {"name": "c", "generation": generation, "labels": labels or {}}, "status": {"s": status}}
    )


spec_or_labels = any_of(generation_changed, labels_changed, annotations_changed)


def test_status_only_updates_and_resyncs_are_dropped():
    assert not spec_or_labels(Event(EventType.MODIFIED, obj(status="new"), obj(status="old")))
    assert not spec_or_labels(Event(EventType.RESYNC, obj(), obj()))


def test_spec_label_adds_and_deletes_pass():
    assert spec_or_labels(Event(EventType.MODIFIED, obj(generation=2), obj()))
    assert spec_or_labels(Event(EventType.MODIFIED, obj(labels={"a": "b"}), obj()))
    assert spec_or_labels(Event(EventType.ADDED, obj()))
    assert spec_or_labels(Event(EventType.DELETED, obj(), obj()))
