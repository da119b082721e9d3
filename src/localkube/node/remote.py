"""`RemoteStore`: the `StoreView` a kubelet of `localkube agent` works on, over another API server's HTTP API.

Reads come from a cache that one informer per kind keeps (list, then watch from the list's resourceVersion
with bookmarks; a watch that ends is resumed, a 410 Gone or any failure relists and replays the
difference as events, so no change is missed). The node's pods are listed and watched with the field
selector `spec.nodeName=<node>`, as a kubelet does; process mode adds the ConfigMaps, Secrets,
ServiceAccounts and Endpoints its pods read. Events are numbered by this cache (`revision`), not by the
server: a watch opened at `revision` sees every later change.

Writes never wait (a reconcile must not): they are queued and sent in order by one task.
- `update` of a pod writes its status through the `pods/status` subresource, conditional on the
  resourceVersion read. The cache holds the written object at once, so the next reconcile does not write
  the same status again; a 409 means a newer pod is on its way through the watch, which brings the cache
  back to the server's truth and the pod back to the kubelet. Any other failure refetches the pod and
  replays it, so the kubelet writes again.
- `delete` of a pod finishes its deletion (`gracePeriodSeconds: 0`, preconditioned on its uid, so a new pod
  of the same name is never touched); the cache drops it at once.
- `create` posts an object (the kubelet's Events); a failure is logged and dropped, as the kubelet's events
  are best-effort.

The cache's objects are frozen (`kubesemantics.frozen`): every reader gets the same object, from a read
or in an event, so changing one in place raises instead of changing it for all. What a caller writes is
frozen on the way in (a new top level over values read from the cache costs only the new part), so the
caller's own object stays the caller's: changing it afterwards changes neither the cache nor what is sent.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubesemantics.frozen import freeze
from localkube.node.apiclient import ApiClient, RequestFailed
from localkube.storage import Event, NotFound, Watch

log = logging.getLogger(__name__)

KEY_ROOT = "/registry/core/"
RELIST_DELAY = 1.0  # seconds before a failed list or watch is tried again
MAX_PENDING = 100_000  # events a slow watcher may owe before it is dropped (and replays the state)


@dataclass(frozen=True)
class Kind:
    """A core/v1 namespaced kind the cache holds, and the field selector that narrows its list and watch."""

    plural: str
    field_selector: str = ""

    @property
    def prefix(self) -> str:
        return f"{KEY_ROOT}{self.plural}/"


def object_key(plural: str, obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{KEY_ROOT}{plural}/{metadata.get('namespace', '')}/{metadata['name']}"


def api_path(key: str) -> str:
    """`/registry/core/<plural>/<namespace>/<name>` as its core/v1 URL path."""
    plural, namespace, name = key.removeprefix(KEY_ROOT).split("/", 2)
    return f"/api/v1/namespaces/{namespace}/{plural}/{name}"


@dataclass(frozen=True)
class _Write:
    method: str
    key: str
    body: dict[str, Any]
    params: dict[str, str] | None = None


class RemoteStore:
    """See the module docstring. `start()` returns once every kind has been listed."""

    def __init__(self, client: ApiClient, kinds: Iterable[Kind]) -> None:
        self._client = client
        self._kinds = tuple(kinds)
        self._objects: dict[str, dict[str, Any]] = {}
        self._revision = 0
        self._streams: set[Watch] = set()
        self._writes: asyncio.Queue[_Write] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        listed = [asyncio.Event() for _ in self._kinds]
        self._tasks = [
            asyncio.create_task(self._inform(kind, done))
            for kind, done in zip(self._kinds, listed, strict=True)
        ]
        self._tasks.append(asyncio.create_task(self._write_all()))
        await asyncio.gather(*(done.wait() for done in listed))

    async def stop(self) -> None:
        """Sends what is queued, then ends the informers and the writer."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._writes.join(), 10.0)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # StoreView: reads.

    @property
    def revision(self) -> int:
        return self._revision

    def get(self, key: str) -> dict[str, Any] | None:
        return self._objects.get(key)

    def keys(self, prefix: str) -> builtins.list[str]:
        return sorted(k for k in self._objects if k.startswith(prefix))

    def list(self, prefix: str) -> tuple[builtins.list[dict[str, Any]], int]:
        return [self._objects[k] for k in self.keys(prefix)], self._revision

    def watch(self, prefix: str, from_rv: int) -> Watch:
        if from_rv != self._revision:
            raise ValueError(
                f"watch from revision {from_rv}: this cache keeps no history (now {self._revision})"
            )
        stream = Watch(self._streams.discard, prefix, from_rv, [], MAX_PENDING)
        self._streams.add(stream)
        return stream

    # StoreView: writes.

    def create(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        frozen: dict[str, Any] = freeze(obj)
        self._writes.put_nowait(_Write("POST", key, frozen))
        return frozen

    def update(self, key: str, obj: dict[str, Any], expected_rv: int | None = None) -> dict[str, Any]:
        if key not in self._objects:
            raise NotFound(key)
        frozen: dict[str, Any] = freeze(obj)
        body = frozen
        if expected_rv is not None:
            body = {**frozen, "metadata": {**frozen["metadata"], "resourceVersion": str(expected_rv)}}
        self._objects[key] = frozen
        self._writes.put_nowait(_Write("PUT", key, body))
        return frozen

    def replace(self, key: str, obj: dict[str, Any], expected_rv: int | None = None) -> int | None:
        self.update(key, obj, expected_rv)
        return None  # queued: the other API server assigns the revision when the PUT is sent

    def delete(self, key: str, expected_rv: int | None = None) -> dict[str, Any]:
        obj = self._objects.pop(key, None)
        if obj is None:
            raise NotFound(key)
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": obj["metadata"].get("uid")}}
        self._writes.put_nowait(_Write("DELETE", key, options))
        return obj

    # The informers.

    def _apply(self, kind: str, key: str, obj: dict[str, Any]) -> None:
        self._revision += 1
        obj = freeze(obj)
        if kind == "DELETED":
            self._objects.pop(key, None)
        else:
            self._objects[key] = obj
        event = Event(kind, key, self._revision, b"", obj)  # type: ignore[arg-type]
        for stream in builtins.list(self._streams):
            if key.startswith(stream.prefix):
                stream.deliver(event)

    async def _inform(self, kind: Kind, listed: asyncio.Event) -> None:
        params = {"fieldSelector": kind.field_selector} if kind.field_selector else {}
        path = f"/api/v1/{kind.plural}"
        while True:
            try:
                answer = await self._client.request("GET", path, params=params)
                self._replace(kind, answer.get("items") or [])
                listed.set()
                version = str(answer.get("metadata", {}).get("resourceVersion", ""))
                while True:  # a watch the server ended is resumed; a failure or 410 relists
                    version = await self._watch(kind, path, params, version)
            except RequestFailed as err:
                log.warning(
                    "%s: list or watch failed, relisting in %.0f s: %s", kind.plural, RELIST_DELAY, err
                )
            await asyncio.sleep(RELIST_DELAY)

    def _replace(self, kind: Kind, items: builtins.list[dict[str, Any]]) -> None:
        """Makes the cache's objects of `kind` those listed, replaying each difference as an event."""
        fresh = {object_key(kind.plural, obj): obj for obj in items}
        for key in self.keys(kind.prefix):
            if key not in fresh:
                self._apply("DELETED", key, self._objects[key])
        for key, obj in fresh.items():
            old = self._objects.get(key)
            if old is None or old["metadata"].get("resourceVersion") != obj["metadata"].get(
                "resourceVersion"
            ):
                self._apply("ADDED" if old is None else "MODIFIED", key, obj)

    async def _watch(self, kind: Kind, path: str, params: dict[str, str], version: str) -> str:
        """Applies the events of one watch; returns the resourceVersion to resume from."""
        watch_params = {**params, "resourceVersion": version, "allowWatchBookmarks": "true"}
        async for event in self._client.watch(path, watch_params):
            kind_name, obj = str(event.get("type")), event.get("object") or {}
            if kind_name == "ERROR":
                raise RequestFailed(
                    int(obj.get("code") or 0), str(obj.get("reason") or ""), str(obj.get("message"))
                )
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind_name in ("ADDED", "MODIFIED", "DELETED"):
                self._apply(kind_name, object_key(kind.plural, obj), obj)
        return version

    # The writer.

    async def _write_all(self) -> None:
        while True:
            write = await self._writes.get()
            try:
                await self._send(write)
            except RequestFailed as err:
                await self._failed(write, err)
            finally:
                self._writes.task_done()

    async def _send(self, write: _Write) -> None:
        path = api_path(write.key)
        if write.method == "POST":
            await self._client.request("POST", path.rsplit("/", 1)[0], body=write.body)
        elif write.method == "PUT":
            await self._client.request("PUT", path + "/status", body=write.body)
        else:
            await self._client.request("DELETE", path, body=write.body)

    async def _failed(self, write: _Write, err: RequestFailed) -> None:
        if write.method == "POST":
            log.warning("creating %s failed: %s", write.key, err)
        elif err.status in (404, 409):
            pass  # gone, or a newer version is on its way through the watch
        else:
            log.warning("%s %s failed, refetching it: %s", write.method, write.key, err)
            await asyncio.sleep(RELIST_DELAY)
            try:
                current = await self._client.request("GET", api_path(write.key))
            except RequestFailed as again:
                if again.status == 404 and write.key in self._objects:
                    self._apply("DELETED", write.key, self._objects[write.key])
                return  # otherwise the informer's relist brings it back
            self._apply("MODIFIED", write.key, current)
