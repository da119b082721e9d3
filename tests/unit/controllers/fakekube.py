"""An in-memory API server behind the operator's client interface, for the controllers' unit tier (as
upstream tests its reconcilers against controller-runtime's fake client).

It is a fake, and says so: it keeps only the API server's rules a reconciler's orchestration depends on:
- every write bumps a global `resourceVersion`; an update or status update naming another one is a
  `ConflictError`; a create of an existing name is `AlreadyExistsError`; reads and writes of a missing one
  `NotFoundError`;
- `generation` starts at 1 and grows when `spec` changes;
- `status` is a subresource: an update keeps the stored status, a status update keeps everything else;
- a delete of an object with finalizers sets `deletionTimestamp` only; it is removed once an update empties
  them (no garbage collection of dependents: a test deletes what it needs gone);
- patches are JSON merge patches;
- what is written crosses the wire as JSON (an enum member is stored as its string, as orjson sends it).

The caches a reconciler reads (`store(resource)`) are filled on every write, as informers that never lag:
what the fake cannot show is a stale cache, which the integration tier covers against localkube.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

import orjson

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import service as service_builder
from kuberay.runtime import errors
from kuberay.runtime.cache import Store, prepare
from kuberay.runtime.client import ObjectList
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.controller import Result, TemporaryError
from kuberay.runtime.resources import POD, SERVICE, ObjectKey, Resource
from kubesemantics.selectors import label_matcher
from localkube.patch.json_patch import merge_patch

JSON = dict[str, Any]
RAYCLUSTER = Resource(constants.API_VERSION, "RayCluster", "rayclusters")


class FakeClient:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self._objects: dict[str, dict[ObjectKey, JSON]] = {}
        self._stores: dict[str, Store] = {}
        self._versions = itertools.count(1)
        self._last = 0
        self.writes: list[tuple[str, str, str]] = []  # (verb, plural, name), in order

    # --- what the tests read ----------------------------------------------------------------------------

    def store(self, resource: Resource) -> Store:
        """The cache of one kind, kept in step with every write."""
        return self._stores.setdefault(resource.plural, Store())

    def objects(self, resource: Resource, namespace: str = "ns") -> dict[str, JSON]:
        """The stored objects of one kind in one namespace, by name (copies)."""
        found = self._objects.get(resource.plural, {})
        return {k.name: copy.deepcopy(v) for k, v in found.items() if k.namespace == namespace}

    def put(self, resource: Resource, obj: Mapping[str, Any]) -> JSON:
        """Stores `obj` (status included, no resourceVersion check) as another party would have: the test's
        setup. A changed spec bumps the generation."""
        body = _wire(obj)
        existing = self._objects.get(resource.plural, {}).get(_key(body))
        metadata = body["metadata"]
        if existing is None:
            metadata.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=self._stamp())
        elif body.get("spec") != existing.get("spec"):
            metadata["generation"] = existing["metadata"]["generation"] + 1
        return self._save(resource, body)

    # --- the client's interface -------------------------------------------------------------------------

    async def get(self, resource: Resource, name: str, namespace: str | None = None, **_: Any) -> JSON:
        return copy.deepcopy(self._existing(resource, ObjectKey(namespace or "", name)))

    async def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None, **_: Any
    ) -> ObjectList:
        match = label_matcher(label_selector)
        items = [
            copy.deepcopy(obj)
            for key, obj in self._objects.get(resource.plural, {}).items()
            if (namespace is None or key.namespace == namespace) and (match is None or match(obj))
        ]
        return ObjectList(items, str(self._last), "")

    async def create(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None) -> JSON:
        body = _wire(obj)
        metadata = body.setdefault("metadata", {})
        if namespace:
            metadata["namespace"] = namespace
        key = _key(body)
        if key in self._objects.get(resource.plural, {}):
            raise errors.AlreadyExistsError(f'{resource.plural} "{key.name}" already exists', status=409)
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = metadata["generateName"] + uuid.uuid4().hex[:5]
        body.setdefault("apiVersion", resource.api_version)
        body.setdefault("kind", resource.kind)
        metadata.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=self._stamp())
        self.writes.append(("create", resource.plural, metadata["name"]))
        return self._save(resource, body)

    async def update(
        self, resource: Resource, obj: Mapping[str, Any], *, subresource: str | None = None
    ) -> JSON:
        body = _wire(obj)
        stored = self._existing(resource, _key(body))
        self._check_version(body, stored)
        if subresource == "status":
            updated = {**copy.deepcopy(stored), "status": body.get("status")}
        else:
            updated = {**body, "status": copy.deepcopy(stored.get("status"))}
            metadata = updated["metadata"]
            for kept in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
                if kept in stored["metadata"]:
                    metadata[kept] = stored["metadata"][kept]
                else:
                    metadata.pop(kept, None)
            if body.get("spec") != stored.get("spec"):
                metadata["generation"] = stored["metadata"].get("generation", 1) + 1
        if updated.get("status") is None:
            updated.pop("status", None)
        self.writes.append((subresource or "update", resource.plural, updated["metadata"]["name"]))
        return self._save(resource, updated)

    async def update_status(self, resource: Resource, obj: Mapping[str, Any]) -> JSON:
        return await self.update(resource, obj, subresource="status")

    async def patch(
        self, resource: Resource, name: str, patch: Any, namespace: str | None = None, **_: Any
    ) -> JSON:
        stored = self._existing(resource, ObjectKey(namespace or "", name))
        self.writes.append(("patch", resource.plural, name))
        return self._save(resource, merge_patch(copy.deepcopy(stored), _wire(patch)))

    async def delete(self, resource: Resource, name: str, namespace: str | None = None, **_: Any) -> None:
        key = ObjectKey(namespace or "", name)
        stored = self._existing(resource, key)
        self.writes.append(("delete", resource.plural, name))
        if stored["metadata"].get("finalizers"):
            if not stored["metadata"].get("deletionTimestamp"):
                stored = copy.deepcopy(stored)
                stored["metadata"]["deletionTimestamp"] = self._stamp()
                self._save(resource, stored)
            return
        self._remove(resource, key)

    # --- the rules ----------------------------------------------------------------------------------------

    def _stamp(self) -> str:
        return self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    def _existing(self, resource: Resource, key: ObjectKey) -> JSON:
        found = self._objects.get(resource.plural, {}).get(key)
        if found is None:
            raise errors.NotFoundError(
                f'{resource.plural} "{key.name}" not found', status=404, reason="NotFound"
            )
        return found

    @staticmethod
    def _check_version(body: Mapping[str, Any], stored: Mapping[str, Any]) -> None:
        version = body["metadata"].get("resourceVersion")
        if version and version != stored["metadata"]["resourceVersion"]:
            raise errors.ConflictError(
                f'Operation cannot be fulfilled on "{stored["metadata"]["name"]}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                status=409,
                reason="Conflict",
            )

    def _save(self, resource: Resource, body: JSON) -> JSON:
        key = _key(body)
        metadata = body["metadata"]
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            self._remove(resource, key)
            return copy.deepcopy(body)
        self._last = next(self._versions)
        metadata["resourceVersion"] = str(self._last)
        self._objects.setdefault(resource.plural, {})[key] = body
        self.store(resource).upsert(prepare(copy.deepcopy(body)))
        return copy.deepcopy(body)

    def _remove(self, resource: Resource, key: ObjectKey) -> None:
        self._objects.get(resource.plural, {}).pop(key, None)
        self.store(resource).remove(key)


class Bench:
    """What a controller's test world starts from: a fake clock, the fake API server on it, and a recorder."""

    def __init__(self, start: datetime) -> None:
        self.clock = FakeClock(start)
        self.kube = FakeClient(self.clock)
        self.events = Events()

    def bring_up(self, cluster_name: str, namespace: str = "ns") -> None:
        """What the RayCluster controller and the node would do for a cluster: the head Service, a running
        and ready head pod, and the cluster `ready` with `HeadPodReady`."""
        cluster = self.kube.objects(RAYCLUSTER, namespace)[cluster_name]
        self.kube.put(SERVICE, service_builder.build_head_service(RayCluster.parse(cluster)))
        head = f"{cluster_name}-head"
        labels = {
            constants.RAY_CLUSTER_LABEL: cluster_name,
            constants.RAY_NODE_TYPE_LABEL: constants.HEAD_NODE,
        }
        ready = {"type": "Ready", "status": "True"}
        pod_status = {"phase": "Running", "podIP": f"10.0.0.{len(self.kube.objects(POD, namespace)) + 1}"}
        self.kube.put(
            POD,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": head, "namespace": namespace, "labels": labels},
                "status": {**pod_status, "conditions": [ready]},
            },
        )
        head_ready = {
            "type": "HeadPodReady",
            "status": "True",
            "reason": "HeadPodRunningAndReady",
            "message": "",
            "lastTransitionTime": self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        status = {"state": "ready", "head": {"podName": head}, "conditions": [head_ready]}
        self.kube.put(RAYCLUSTER, {**cluster, "status": status})

    @staticmethod
    async def run(
        reconcile: Callable[[ObjectKey], Awaitable[Result]], key: ObjectKey
    ) -> Result | TemporaryError:
        """One pass; a temporary error is returned, as the controller would back off and retry."""
        try:
            return await reconcile(key)
        except TemporaryError as e:
            return e


class Events:
    """A recorder that keeps what it is told: (type, reason, message)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def record(self, obj: Mapping[str, Any], type: str, reason: str, message: str, action: str = "") -> None:
        self.seen.append((type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.seen]


def _key(obj: Mapping[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return ObjectKey(metadata.get("namespace") or "", metadata.get("name") or "")


def _wire(obj: Mapping[str, Any]) -> JSON:
    decoded: JSON = orjson.loads(orjson.dumps(obj))
    return decoded
