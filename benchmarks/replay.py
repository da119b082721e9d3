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

The client is kept cheap so that the server, not the replay, bounds the rate: each body is encoded once
before the replay, as literal bytes around slots for the recording's uids and the expected resourceVersion
(filled in per send), and each of the `concurrency` workers sends over a keep-alive HTTP/1.1 connection of
its own (`_Connection`, asyncio streams). With httpx, the replaying process used more CPU than the
localkube it measured (15.6-17.9 against 11.0-14.0 CPU s for 12,396 writes); with this client, 1.7-2.7.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import ssl
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class Endpoint:
    """Where the replay sends its writes: an API server's `https://host:port`, its CA and a bearer token."""

    url: str
    ssl_context: ssl.SSLContext
    token: str


class _Connection:
    """One keep-alive HTTP/1.1 connection over asyncio streams, one request at a time.

    httpx cost more CPU per request than the server it measured (py-spy: 93 % of the replay's samples in
    httpx and httpcore, a third of that in httpcore's `import sniffio`, which fails here and so searches
    sys.path again on every lock): this writes a request as one buffer and reads the answer by
    Content-Length or chunks, nothing more.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        parsed = urllib.parse.urlsplit(endpoint.url)
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 443
        self._ssl = endpoint.ssl_context if parsed.scheme == "https" else None
        self._fixed = f"Host: {parsed.netloc}\r\nAuthorization: Bearer {endpoint.token}\r\n".encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, content: bytes = b"", content_type: str = ""
    ) -> tuple[int, bytes]:
        """Sends one request; returns the answer's status and body."""
        reused = self._writer is not None and self._reader is not None and not self._reader.at_eof()
        if not reused:
            await self._connect()
        try:
            return await self._exchange(method, path, content, content_type)
        except (ConnectionError, asyncio.IncompleteReadError):
            if not reused:
                raise
            # The server closed the idle connection as the request left (it was not read): once more on a
            # new one, as any HTTP/1.1 client does.
            await self._connect()
            return await self._exchange(method, path, content, content_type)

    async def _connect(self) -> None:
        self.close()
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port, ssl=self._ssl)

    async def _exchange(self, method: str, path: str, content: bytes, content_type: str) -> tuple[int, bytes]:
        assert self._reader is not None and self._writer is not None
        head = f"{method} {path} HTTP/1.1\r\n".encode() + self._fixed
        if content_type:
            head += f"Content-Type: {content_type}\r\n".encode()
        self._writer.write(head + f"Content-Length: {len(content)}\r\n\r\n".encode() + content)
        answer = await self._reader.readuntil(b"\r\n\r\n")
        status = int(answer[9:12])
        length, chunked, close = 0, False, False
        for line in answer.lower().split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value
            elif name == b"connection":
                close = b"close" in value
        if chunked:
            parts = []
            while size := int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append(await self._reader.readexactly(size + 2))
            await self._reader.readuntil(b"\r\n")  # the empty trailer
            body = b"".join(part[:-2] for part in parts)
        else:
            body = await self._reader.readexactly(length)
        if close:
            self.close()
        return status, body

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


@dataclass
class _Template:
    """A write's body encoded once: literal bytes between the slots (odd indices) that change per replay,
    the recording's uids and the expected resourceVersion, and what that slot holds unless the replay has
    seen the object."""

    parts: list[bytes]
    recorded_version: bytes = b""


_VERSION_SLOT = "@replay: resourceVersion@"
_SLOTS = re.compile(rb"(" + _UID.pattern + rb'|"' + _VERSION_SLOT.encode() + rb'")')


def _template(write: Write) -> _Template:
    body = write.body
    recorded = b""
    metadata = body.get("metadata") if isinstance(body, dict) else None
    if isinstance(metadata, dict) and "resourceVersion" in metadata and write.verb in ("update", "patch"):
        recorded = orjson.dumps(metadata["resourceVersion"])
        body = {**body, "metadata": {**metadata, "resourceVersion": _VERSION_SLOT}}
    return _Template(_SLOTS.split(orjson.dumps(body) if body is not None else b""), recorded)


class Replay:
    """Sends recorded writes to a server, each after what it depends on; `failed` counts the refused."""

    def __init__(self, endpoint: Endpoint, writes: list[Write]) -> None:
        self.endpoint = endpoint
        self.writes = writes
        self.failed = 0
        self._uids: dict[bytes, bytes] = {}  # the recording's uid -> the replay's
        self._names: dict[Key, str] = {}  # a generated name in the recording -> the replay's
        self._versions: dict[Key, bytes] = {}  # the resourceVersion last seen, by object, as JSON
        self._templates = [_template(write) for write in writes]
        self._after: list[list[asyncio.Event]] = _dependencies(writes, self._templates)

    async def run(self, concurrency: int) -> float:
        """Replays every write with `concurrency` in flight; returns the seconds it took."""
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(len(self.writes)):
            queue.put_nowait(index)

        async def worker() -> None:
            connection = _Connection(self.endpoint)
            try:
                while not queue.empty():
                    index = queue.get_nowait()
                    for event in self._after[index]:
                        await event.wait()
                    try:
                        await self._send(connection, self.writes[index], self._templates[index])
                    finally:
                        self.writes[index].done.set()
            finally:
                connection.close()

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

    def _content(self, write: Write, template: _Template) -> bytes:
        parts = template.parts
        if len(parts) == 1:
            return parts[0]
        filled = parts.copy()
        for index in range(1, len(parts), 2):
            if parts[index][0] == 0x22:  # the resourceVersion slot, quoted; a uid is bare hex
                filled[index] = self._versions.get(write.key, template.recorded_version)
            else:
                filled[index] = self._uids.get(parts[index], parts[index])
        return b"".join(filled)

    async def _send(self, connection: _Connection, write: Write, template: _Template) -> None:
        content_type = "application/json"
        if write.verb == "patch":
            content_type = "application/json-patch+json" if isinstance(write.body, list) else (
                "application/merge-patch+json"
            )  # fmt: skip
        for _ in range(_CONFLICT_RETRIES):
            status, answer = await connection.request(
                _METHODS[write.verb], self._path(write), self._content(write, template), content_type
            )
            if status == 409 and write.verb in ("update", "patch"):
                await self._refresh_version(connection, write)
                continue
            break
        if not 200 <= status < 300:
            self.failed += 1
            return
        if write.verb == "delete":
            return
        metadata = orjson.loads(answer).get("metadata") or {}
        self._versions[write.key] = orjson.dumps(metadata.get("resourceVersion", ""))
        if write.verb == "create":
            if write.made_uid:
                self._uids[write.made_uid.encode()] = metadata.get("uid", "").encode()
            if metadata.get("name") and metadata["name"] != write.name:
                self._names[write.key] = metadata["name"]

    async def _refresh_version(self, connection: _Connection, write: Write) -> None:
        read = Write(
            "get", write.group, write.version, write.resource, write.namespace, write.name, "", "", None
        )
        status, answer = await connection.request("GET", self._path(read))
        if 200 <= status < 300:
            self._versions[write.key] = orjson.dumps(orjson.loads(answer)["metadata"]["resourceVersion"])


def _dependencies(writes: Iterable[Write], templates: Iterable[_Template]) -> list[list[asyncio.Event]]:
    """For each write, the completions it waits for: the last earlier write to its object, and the creates
    of the objects whose uids its body names."""
    last: dict[Key, asyncio.Event] = {}
    creates: dict[bytes, asyncio.Event] = {}
    after = []
    for write, template in zip(writes, templates, strict=True):
        waits = [last[write.key]] if write.key in last else []
        waits += [creates[uid] for uid in set(template.parts[1::2]) if uid in creates]
        after.append(waits)
        last[write.key] = write.done
        if write.made_uid:
            creates[write.made_uid.encode()] = write.done
    return after
