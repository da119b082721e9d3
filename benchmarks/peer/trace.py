"""What one client asked localkube, minute by minute, from an audit log of every request.

    python -m benchmarks.peer.trace AUDIT_LOG [--agent TEXT]

Reads an audit log written under a Metadata-level policy for every request (`benchmarks.scale
--audit-dir`) and prints, per minute since the first request, the client's requests by verb and resource
(`create pods`, `update rayclusters/status`, `watch pods`, ...), the answers that were not 2xx by code, and
each watch or list with its query (resourceVersion, selectors): a client that stops writing shows what it
still asks, and a watch restarted from an old resourceVersion or a list that repeats shows an informer
relisting. `--agent` keeps the requests whose User-Agent contains TEXT (the benchmark and its operator
both act as the admin; upstream's operator sends `ray-operator/...`, the benchmark `python-httpx/...`).
"""

from __future__ import annotations

import argparse
import datetime
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def _events(path: Path, agent: str | None) -> Iterator[dict[str, Any]]:
    with path.open("rb") as log:
        for line in log:
            event = orjson.loads(line)
            if agent is None or agent in event.get("userAgent", ""):
                yield event


def _when(event: dict[str, Any]) -> datetime.datetime:
    return datetime.datetime.fromisoformat(event["requestReceivedTimestamp"])


def _what(event: dict[str, Any]) -> str:
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", event["requestURI"].split("?", 1)[0])
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    return f"{event['verb']} {resource}"


def summarize(path: Path, agent: str | None) -> dict[str, Any]:
    """Per minute: requests by verb and resource, non-2xx answers by code and request, and the queries of
    every list and watch (kept in order)."""
    by_minute: dict[int, Counter[str]] = defaultdict(Counter)
    refused: dict[int, Counter[str]] = defaultdict(Counter)
    reads: list[tuple[float, str, int]] = []
    start: datetime.datetime | None = None
    for event in _events(path, agent):
        when = _when(event)
        start = start or when
        offset = (when - start).total_seconds()
        minute = int(offset // 60)
        what = _what(event)
        by_minute[minute][what] += 1
        code = event["responseStatus"]["code"]
        if not 200 <= code < 300:
            refused[minute][f"{code} {what}"] += 1
        if event["verb"] in ("list", "watch"):
            reads.append((round(offset, 1), event["requestURI"], code))
    return {"minutes": by_minute, "refused": refused, "reads": reads}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("audit_log", type=Path)
    parser.add_argument("--agent", default=None, help="only the requests whose User-Agent contains this")
    args = parser.parse_args()
    found = summarize(args.audit_log, args.agent)
    for minute in sorted(found["minutes"]):
        counts = ", ".join(f"{what} {n}" for what, n in found["minutes"][minute].most_common())
        print(f"minute {minute}: {counts}")
        if found["refused"][minute]:
            print(f"  not 2xx: {dict(found['refused'][minute])}")
    print("lists and watches (seconds since the first request, URI, code):")
    for offset, uri, code in found["reads"]:
        print(f"  {offset:8.1f} {code} {uri}")


if __name__ == "__main__":
    main()
