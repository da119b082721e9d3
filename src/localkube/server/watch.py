"""Watch streams: newline-delimited JSON watch events, as `GET ...?watch=true` answers.

Semantics follow the real server's watch cache:
- without a resourceVersion (or with "0", or with `sendInitialEvents=true`) the stream starts with an
  ADDED event for every selected object, then follows changes after that state;
- with a resourceVersion it replays every change after it, then follows; a version older than the
  store's compacted revision gets one ERROR event carrying a 410 `Expired` Status, then the stream ends;
- with `allowWatchBookmarks=true`, BOOKMARK events carry the newest revision while the stream is idle
  (the store publishes writes synchronously, so an idle watch has seen everything up to that revision),
  and `sendInitialEvents=true` ends the initial burst with a bookmark annotated
  `k8s.io/initial-events-end`;
- `timeoutSeconds` ends the stream; without it the stream ends after 30-60 minutes, as a real server's
  does, so clients exercise their resume path.
With a selector, the stream follows the set of selected objects, as the watch cache does: an object
that comes to match is ADDED, one that stops matching is DELETED. The store's events carry no previous
state, so the set is seeded from the selected objects when the watch starts; on a resume, replayed events
of an object whose selection changed since may show as an extra DELETED of an object the client never
had, or an ADDED of one it has, which informers treat as a no-op and an update.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from kubesemantics.status import status_body
from localkube.server.registry import ResourceType
from localkube.server.rest import Query, Resources, parse_resource_version
from localkube.server.tables import table
from localkube.storage import Compacted, WatchOverflow

BOOKMARK_INTERVAL_SECONDS = 5.0
_INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _line(event_type: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


def too_old(requested: int, compacted: int) -> dict[str, Any]:
    return status_body(410, f"too old resource version: {requested} ({compacted + 1})", "Expired")


async def stream(
    resources: Resources,
    resource_type: ResourceType,
    namespace: str | None,
    query: Query,
    matches: Callable[[dict[str, Any]], bool] | None,
    as_table: str | None,
) -> AsyncIterator[bytes]:
    """The body of a watch response, chunk by chunk. `as_table` is the includeObject mode for Tables."""
    store = resources.store
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else random.uniform(1800, 3600)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    prefix = resource_type.prefix(namespace)
    requested = parse_resource_version(query.get("resourceVersion"))
    initial = requested in (None, 0) or query.get("sendInitialEvents") == "true"

    def render(event_type: str, obj: dict[str, Any]) -> bytes:
        obj = resources.output(resource_type, obj)
        if as_table is not None:
            meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            return _line(event_type, table(resource_type, [obj], meta, as_table))
        return _line(event_type, obj)

    objects, listed_rv = store.list(prefix) if initial or matches is not None else ([], 0)
    await store.settled()  # what the list holds goes out once durable, as a reply would
    selected = [obj for obj in objects if matches is None or matches(obj)]
    visible = {resource_type.key(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in selected}
    if initial:
        from_rv = listed_rv
        burst = [render("ADDED", obj) for obj in selected]
        if burst:
            yield b"".join(burst)
        if bookmarks and query.get("sendInitialEvents") == "true":
            yield _bookmark(resource_type, from_rv, initial_end=True)
    else:
        from_rv = requested or 0
    try:
        watch = store.watch(prefix, from_rv)
    except Compacted as gone:
        yield _line("ERROR", too_old(gone.requested, gone.compacted))
        return
    # The raw stored bytes are the reply when nothing needs rewriting: no decode, no re-encode.
    raw = matches is None and as_table is None and resource_type.stored_as is None
    try:
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            try:
                async with asyncio.timeout(min(remaining, BOOKMARK_INTERVAL_SECONDS)):
                    event = await anext(watch)
            except TimeoutError:
                if bookmarks and loop.time() < deadline:
                    yield _bookmark(resource_type, store.durable_revision)
                continue
            if raw and (
                not resource_type.custom or event.object.get("apiVersion") == resource_type.api_version
            ):
                yield b'{"type":"' + event.type.encode() + b'","object":' + event.value + b"}\n"
                continue
            obj = event.object
            if matches is None:
                yield render(event.type, dict(obj))
                continue
            now_selected = event.type != "DELETED" and matches(obj)
            # A creation was selected by nothing before it, whatever the current list (taken after it, when
            # the watch replays from an older resourceVersion) says.
            was_selected = event.key in visible and event.type != "ADDED"
            if now_selected:
                visible.add(event.key)
                yield render("MODIFIED" if was_selected else "ADDED", dict(obj))
            elif was_selected or (event.type == "DELETED" and matches(obj)):
                visible.discard(event.key)
                yield render("DELETED", dict(obj))
    except (StopAsyncIteration, WatchOverflow):
        return
    finally:
        watch.close()


def _bookmark(resource_type: ResourceType, revision: int, initial_end: bool = False) -> bytes:
    metadata: dict[str, Any] = {"resourceVersion": str(revision)}
    if initial_end:
        metadata["annotations"] = {_INITIAL_EVENTS_END: "true"}
    return _line(
        "BOOKMARK",
        {"kind": resource_type.kind, "apiVersion": resource_type.api_version, "metadata": metadata},
    )
