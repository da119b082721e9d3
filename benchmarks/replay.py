"""Replaying the writes an operator sent, as localkube's audit log recorded them, against a fresh localkube.

`benchmarks.scale` measures how fast localkube takes the operator's own request mix (pod and Service
creates, status writes, Events, finalizers; not bare pod creates) by recording one run with the audit log
(`POLICY`: every write with its request and response, no reads) and replaying its writes here as fast as
`concurrency` requests in flight allow. Reads are left out: an operator serves them from its cache, and
its watches cost the server what the replay's own writes cost it.

A write is sent once what it depends on is done: the earlier writes to the same object, and the creates
of the objects whose uids it names (an ownerReference). What the fresh server gives differently is mapped:
a created object's uid (in later bodies) and a generated name (in later paths), and the resourceVersion an
update or a patch expects is the one the replay last saw for that object (on a conflict, it reads the
object and tries again). Patches are sent as JSON patches when they are lists and merge patches otherwise
(the audit log does not keep the content type).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "rules": [
        {"level": "None", "verbs": ["get", "list", "watch"]},
        {"level": "RequestResponse"},
    ],
}
_METHODS = {"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}
_UID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CONFLICT_RETRIES = 3

Key = tuple[str, str, str, str]  # group, resource, namespace, name


@dataclass
class Write:
    """One recorded write: where it went, what it sent and, for a create, what the recording's server made."""

    verb: str
    group: str
    version: str
    resource: str
    namespace: str
    name: str
    subresource: str
    query: str
    body: Any
    made_uid: str = ""
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def key(self) -> Key:
        return self.group, self.resource, self.namespace, self.name


def recorded_writes(audit_log: Path, namespace: str) -> list[Write]:
    """The successful writes in `namespace` of an audit log written under `POLICY`, in the order sent."""
    found = []
    for line in audit_log.read_bytes().splitlines():
        event = orjson.loads(line)
        ref = event.get("objectRef") or {}
        code = event["responseStatus"]["code"]
        if event["verb"] not in _METHODS or ref.get("namespace") != namespace or not 200 <= code < 300:
            continue
        made = event.get("responseObject") or {}
        name = ref.get("name") or (made.get("metadata") or {}).get("name", "")
        _, _, query = event["requestURI"].partition("?")
        found.append(
            Write(
                event["verb"],
                ref.get("apiGroup", ""),
                ref["apiVersion"],
                ref["resource"],
                namespace,
                name,
                ref.get("subresource", ""),
                query,
                event.get("requestObject"),
                made_uid=(made.get("metadata") or {}).get("uid", "") if event["verb"] == "create" else "",
            )  # fmt: skip
        )
    return found


def fresh(writes: Iterable[Write], namespace: str | None = None) -> list[Write]:
    """The writes again, not yet done (a list can be replayed once), moved to `namespace` if given."""
    copies = []
    for write in writes:
        body = write.body
        target = namespace or write.namespace
        metadata = body.get("metadata") if isinstance(body, dict) else None
        if namespace and isinstance(metadata, dict) and "namespace" in metadata:
            body = {**body, "metadata": {**metadata, "namespace": namespace}}
        copies.append(dataclasses.replace(write, namespace=target, body=body, done=asyncio.Event()))
    return copies


class Replay:
    """Sends recorded writes to a server, each after what it depends on; `failed` counts the refused."""

    def __init__(self, client: httpx.AsyncClient, writes: list[Write]) -> None:
        self.client = client
        self.writes = writes
        self.failed = 0
        self._uids: dict[str, str] = {}  # the recording's uid -> the replay's
        self._names: dict[Key, str] = {}  # a generated name in the recording -> the replay's
        self._versions: dict[Key, str] = {}  # the resourceVersion last seen, by object
        self._after: list[list[asyncio.Event]] = _dependencies(writes)

    async def run(self, concurrency: int) -> float:
        """Replays every write with `concurrency` in flight; returns the seconds it took."""
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(len(self.writes)):
            queue.put_nowait(index)

        async def worker() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                for event in self._after[index]:
                    await event.wait()
                try:
                    await self._send(self.writes[index])
                finally:
                    self.writes[index].done.set()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started

    def _path(self, write: Write) -> str:
        prefix = "/api/v1" if not write.group else f"/apis/{write.group}/{write.version}"
        path = f"{prefix}/namespaces/{write.namespace}/{write.resource}"
        if write.verb != "create":
            path += "/" + self._names.get(write.key, write.name)
            if write.subresource:
                path += "/" + write.subresource
        return path + ("?" + write.query if write.query else "")

    def _content(self, write: Write) -> bytes:
        body = write.body
        if isinstance(body, dict) and write.verb in ("update", "patch"):
            metadata = body.get("metadata")
            version = self._versions.get(write.key)
            if isinstance(metadata, dict) and "resourceVersion" in metadata and version is not None:
                body = {**body, "metadata": {**metadata, "resourceVersion": version}}
        content = orjson.dumps(body) if body is not None else b""
        for uid in set(_UID.findall(content)):
            mapped = self._uids.get(uid.decode())
            if mapped is not None:
                content = content.replace(uid, mapped.encode())
        return content

    async def _send(self, write: Write) -> None:
        content_type = "application/json"
        if write.verb == "patch":
            content_type = "application/json-patch+json" if isinstance(write.body, list) else (
                "application/merge-patch+json"
            )  # fmt: skip
        for _ in range(_CONFLICT_RETRIES):
            response = await self.client.request(
                _METHODS[write.verb],
                self._path(write),
                content=self._content(write),
                headers={"Content-Type": content_type},
            )
            if response.status_code == 409 and write.verb in ("update", "patch"):
                await self._refresh_version(write)
                continue
            break
        if not response.is_success:
            self.failed += 1
            return
        if write.verb == "delete":
            return
        metadata = response.json().get("metadata") or {}
        self._versions[write.key] = metadata.get("resourceVersion", "")
        if write.verb == "create":
            if write.made_uid:
                self._uids[write.made_uid] = metadata.get("uid", "")
            if metadata.get("name") and metadata["name"] != write.name:
                self._names[write.key] = metadata["name"]

    async def _refresh_version(self, write: Write) -> None:
        read = Write(
            "get", write.group, write.version, write.resource, write.namespace, write.name, "", "", None
        )
        response = await self.client.get(self._path(read))
        if response.is_success:
            self._versions[write.key] = response.json()["metadata"]["resourceVersion"]


def _dependencies(writes: Iterable[Write]) -> list[list[asyncio.Event]]:
    """For each write, the completions it waits for: the last earlier write to its object, and the creates
    of the objects whose uids its body names."""
    last: dict[Key, asyncio.Event] = {}
    creates: dict[str, asyncio.Event] = {}
    after = []
    for write in writes:
        waits = [last[write.key]] if write.key in last else []
        body = orjson.dumps(write.body) if write.body is not None else b""
        waits += [creates[uid.decode()] for uid in set(_UID.findall(body)) if uid.decode() in creates]
        after.append(waits)
        last[write.key] = write.done
        if write.made_uid:
            creates[write.made_uid] = write.done
    return after
