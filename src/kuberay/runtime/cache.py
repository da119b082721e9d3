"""The indexed in-memory store an informer fills and reconcilers read.

Objects are stored frozen (`kuberay.runtime.frozen`) with `metadata.managedFields` removed, keyed by
`ObjectKey`. Indexes map an index value to the keys of the objects that produce it; they are updated with
every write, so a lookup never scans. Built-in indexes: `namespace` and `owner-uid` (the uid of every
ownerReference). Only the informer writes (`upsert`, `remove`); everyone else reads.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kuberay.runtime.frozen import freeze
from kuberay.runtime.resources import ObjectKey
from kubesemantics.selectors import matches_labels

CachedObject = Mapping[str, Any]
IndexFunc = Callable[[CachedObject], Iterable[str]]

NAMESPACE_INDEX = "namespace"
OWNER_UID_INDEX = "owner-uid"


def _namespace(obj: CachedObject) -> Iterable[str]:
    return (obj["metadata"].get("namespace") or "",)


def _owner_uids(obj: CachedObject) -> Iterable[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or () if ref.get("uid")]


def prepare(obj: dict[str, Any]) -> CachedObject:
    """What the cache keeps of an object from the API: everything but managedFields, frozen."""
    obj.get("metadata", {}).pop("managedFields", None)
    frozen: CachedObject = freeze(obj)
    return frozen


class Store:
    def __init__(self) -> None:
        self._objects: dict[ObjectKey, CachedObject] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: _namespace, OWNER_UID_INDEX: _owner_uids}
        self._indexes: dict[str, defaultdict[str, set[ObjectKey]]] = {
            name: defaultdict(set) for name in self._indexers
        }
        self._label_indexes: dict[str, str] = {}  # label -> index name

    def add_index(self, name: str, index: IndexFunc) -> None:
        """Adds an index; objects already stored are indexed at once."""
        if name in self._indexers:
            raise ValueError(f"index {name!r} already exists")
        self._install(name, index)

    def index_label(self, label: str) -> None:
        """Indexes objects by `<namespace>/<value of label>`, so that `list(namespace, {label: value, ...})`
        looks only at that label's objects instead of the namespace's. Idempotent: controllers sharing a
        cache may each ask for the same label."""
        name = f"label:{label}"
        if label in self._label_indexes:
            return

        def index(obj: CachedObject) -> Iterable[str]:
            metadata = obj.get("metadata") or {}
            value = (metadata.get("labels") or {}).get(label)
            return (f"{metadata.get('namespace', '')}/{value}",) if value is not None else ()

        self._install(name, index)
        self._label_indexes[label] = name

    def _install(self, name: str, index: IndexFunc) -> None:
        self._indexers[name] = index
        self._indexes[name] = defaultdict(set)
        for key, obj in self._objects.items():
            for value in index(obj):
                self._indexes[name][value].add(key)

    def __len__(self) -> int:
        return len(self._objects)

    def all_keys(self) -> list[ObjectKey]:
        return list(self._objects)

    def get(self, key: ObjectKey) -> CachedObject | None:
        return self._objects.get(key)

    def list(
        self, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> list[CachedObject]:
        if namespace is None:
            objects = list(self._objects.values())
        else:
            indexed = next((label for label in labels or () if label in self._label_indexes), None)
            if indexed is not None and labels is not None:
                objects = self.by_index(self._label_indexes[indexed], f"{namespace}/{labels[indexed]}")
            else:
                objects = self.by_index(NAMESPACE_INDEX, namespace)
        return [
            obj
            for obj in objects
            if labels is None or matches_labels(labels, obj["metadata"].get("labels") or {})
        ]

    def by_index(self, index: str, value: str) -> builtins.list[CachedObject]:
        if index not in self._indexes:
            raise KeyError(f"no index named {index!r}; known: {sorted(self._indexes)}")
        return [self._objects[key] for key in self._indexes[index].get(value, ())]

    def upsert(self, obj: CachedObject) -> CachedObject | None:
        """Stores an object (already `prepare`d) and returns the one it replaced."""
        key = ObjectKey.of(obj)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        for name, index in self._indexers.items():
            for value in index(obj):
                self._indexes[name][value].add(key)
        return old

    def remove(self, key: ObjectKey) -> CachedObject | None:
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def _unindex(self, key: ObjectKey, obj: CachedObject) -> None:
        for name, index in self._indexers.items():
            bucket = self._indexes[name]
            for value in index(obj):
                keys = bucket.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del bucket[value]
