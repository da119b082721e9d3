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
its own (`_Connection`: h11, the HTTP/1.1 state machine httpcore uses, over asyncio streams). With httpx, the
replaying process used more CPU than the localkube it measured (15.6-17.9 against 11.0-14.0 CPU s for
12,396 writes); with a hand-written HTTP/1.1 exchange, 1.7-2.7; with h11, 3.1-4.5 against localkube's
11.8-14.1 (the hand-written one 2.7-4.2 on the same machine that day: means 3.7 against 3.25 CPU s, h11
about 30 us more a write).
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

import h11
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
    sys.path again on every lock): this keeps only httpcore's HTTP/1.1 state machine, h11, for the framing
    (the request written as one buffer, the answer read by Content-Length or chunks) and its own asyncio
    streams, with no pool, locks or timeouts around them.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        parsed = urllib.parse.urlsplit(endpoint.url)
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 443
        self._ssl = endpoint.ssl_context if parsed.scheme == "https" else None
        self._fixed = [
            (b"Host", parsed.netloc.encode()),
            (b"Authorization", f"Bearer {endpoint.token}".encode()),
        ]
        self._http = h11.Connection(h11.CLIENT)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, content: bytes = b"", content_type: str = ""
    ) -> tuple[int, bytes]:
        """Sends one request; returns the answer's status and body."""
        reused = (
            self._writer is not None
            and self._reader is not None
            and not self._reader.at_eof()
            and self._http.our_state is h11.IDLE  # not after an exchange cut short
        )
        if not reused:
            await self._connect()
        try:
            return await self._exchange(method, path, content, content_type)
        except (ConnectionError, h11.RemoteProtocolError):
            if not reused:
                raise
            # The server closed the idle connection as the request left (it was not read): once more on a
            # new one, as any HTTP/1.1 client does.
            await self._connect()
            return await self._exchange(method, path, content, content_type)

    async def _connect(self) -> None:
        self.close()
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port, ssl=self._ssl)
        self._http = h11.Connection(h11.CLIENT)

    async def _exchange(self, method: str, path: str, content: bytes, content_type: str) -> tuple[int, bytes]:
        assert self._reader is not None and self._writer is not None
        http = self._http
        headers = [*self._fixed, (b"Content-Length", b"%d" % len(content))]
        if content_type:
            headers.append((b"Content-Type", content_type.encode()))
        out = [http.send(h11.Request(method=method, target=path, headers=headers))]
        if content:
            out.append(http.send(h11.Data(data=content)))
        out.append(http.send(h11.EndOfMessage()))
        self._writer.write(b"".join(part for part in out if part))  # as one write
        status, parts = 0, []
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                http.receive_data(await self._reader.read(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                parts.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionError("the server closed the connection before its answer ended")
        if http.our_state is h11.DONE and http.their_state is h11.DONE:
            http.start_next_cycle()
        else:  # the server said Connection: close
            self.close()
        return status, b"".join(parts)

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
