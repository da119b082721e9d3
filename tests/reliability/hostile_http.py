"""What the hostile-input drills of the HTTP servers that name things by path and query (the History Server,
the APIServer) share: requests handed to the ASGI app as uvicorn hands them over, the hostile values, and
the tally the drills print.

A request goes to the app itself, with the scope uvicorn builds from the request line (the target decoded
once, the query string raw): `..` and encoded separators arrive as a client sent them, where httpx, and so
Starlette's test client, would normalise `..` away before the server saw it. Every request has a bound; one
that outlives it counts as a hang. An exception out of the app, or a response header uvicorn would refuse to
send (a CR, LF or NUL in it), is what uvicorn answers 500.
"""

from __future__ import annotations

import asyncio
import collections
import re
import traceback
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute, Mount, Route

from support.runreport import report

TIMEOUT = 10.0
# Past NAME_MAX (255), so a name used as a file or directory name fails as the OS fails it; and 64 KiB.
LONG, VERY_LONG = "a" * 300, "b" * 65536


def hostile_values(absolute: str, depths: Sequence[int], tail: str = "secret.txt") -> list[tuple[str, str]]:
    """(label, value as it goes on the wire, percent-encoded where a client would encode it). A relative
    traversal climbs each of `depths` to `tail` (a climb past the secret lands nowhere: the drill gives the
    depths from the server's directories to where the secret is planted); `absolute` is the secret's path."""
    climbs = [
        (f"{label} x{depth}", step * depth + tail)
        for depth in depths
        for label, step in (("../", "../"), ("%2e%2e%2f", "%2e%2e%2f"), ("..%2F", "..%2F"))
    ]
    return [
        ("dotdot", ".."),
        ("dot", "."),
        ("dotdot/dotdot", "../.."),
        *climbs,
        ("%252e", "%252e%252e%252f" * max(depths) + tail),
        ("absolute", urllib.parse.quote(absolute, safe="")),
        ("absolute raw", absolute),
        ("NUL", "a%00b"),
        ("CRLF", "a%0d%0aSet-Cookie:%20x=1"),
        ("quote", "a%22%3B%20x%3D%22"),
        ("NUL after dotdot", "..%00"),
        ("backslash", "..%5C" * max(depths) + tail.replace("/", "%5C")),
        ("backslash raw", "..\\" * max(depths) + tail.replace("/", "\\")),
        ("empty", ""),
        ("long", LONG),
        ("very long", VERY_LONG),
        ("invalid percent-encoding", "%zz%"),
        ("invalid UTF-8", "%ff%fe%c3"),
        ("glob", "*"),
    ]


def malformed_queries(names: Sequence[str]) -> list[tuple[str, str]]:
    """(label, whole query string): oversized and malformed ones, and repeated keys of the names given."""
    first = names[0] if names else "x"
    return [
        ("10k params", "&".join(f"p{i}=v{i}" for i in range(10_000))),
        ("huge value", f"{first}=" + "c" * (1 << 20)),
        ("invalid percent-encoding", f"{first}=%zz&%=%&%%%=1&=%"),
        ("repeated keys", "&".join(f"{n}={i}" for n in names for i in range(200))),
        ("keys without values", "&".join(names) + "&&&=&=="),
    ]


# uvicorn's checks of a response's headers (httptools_impl): a header that fails them is never sent.
_HEADER_NAME = re.compile(b'[\x00-\x1f\x7f()<>@,;:\\[\\]={} \t\\\\"]')
_HEADER_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


async def call(
    app: Any, method: str, target: str, headers: Iterable[tuple[str, str]] = (), body: bytes = b""
) -> Answer | None:
    """The app's answer to one request (None if it took longer than TIMEOUT); an exception out of the
    app is the 500 uvicorn would send, its traceback as the body."""
    raw_path, _, query = target.partition("?")
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": method, "scheme": "http", "root_path": "", "state": {},
        "path": urllib.parse.unquote(raw_path), "raw_path": raw_path.encode("latin-1"),
        "query_string": query.encode("latin-1"),
        "headers": [(b"host", b"testserver"), *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers)],
        "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
    }  # fmt: skip
    sent = asyncio.Event()
    received = False
    status, out_headers, chunks = 0, {}, []

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await sent.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            for name, value in message.get("headers", []):  # what uvicorn refuses to send (then a 500)
                if _HEADER_NAME.search(name) or _HEADER_VALUE.search(value):
                    raise RuntimeError(f"Invalid HTTP header: {name!r}: {value[:200]!r}")
            status = message["status"]
            out_headers.update(
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
            )
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                sent.set()

    try:
        await asyncio.wait_for(app(scope, receive, send), TIMEOUT)
    except TimeoutError:
        return None
    except Exception:
        return Answer(500, {}, traceback.format_exc().encode())
    return Answer(status, out_headers, b"".join(chunks))


@dataclass(frozen=True)
class Target:
    """A route as the app declares it: its path template, its parameters and its methods."""

    path: str
    params: tuple[str, ...]
    methods: tuple[str, ...]

    def url(self, values: dict[str, str]) -> str:
        return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m.group(1)], self.path)


def targets(routes: Iterable[BaseRoute]) -> list[Target]:
    """Every route of an app (a Mount as its path and anything under it), so that a new one is drilled."""
    found = []
    for route in routes:
        if isinstance(route, Mount):
            found.append(Target(route.path + "/{path:path}", ("path",), ("GET",)))
        elif isinstance(route, Route):
            methods = tuple(sorted((route.methods or {"GET"}) - {"HEAD"}))
            found.append(Target(route.path, tuple(route.param_convertors), methods))
    return found


def read_query_names(sources: Iterable[Path]) -> list[str]:
    """The query parameters the server's code reads (`query_params.get("x")`, `q.getlist("x")`, ...)."""
    pattern = re.compile(
        r"""(?:query_params|\bq)\.(?:get|getlist)\(\s*["'](\w+)["']|_int\(\s*q,\s*["'](\w+)["']"""
    )
    names = {a or b for source in sources for a, b in pattern.findall(source.read_text())}
    return sorted(names)


@dataclass
class Tally:
    """Counts per route of the requests tried and how each was answered; what broke an invariant."""

    title: str
    secrets: Sequence[bytes]
    outside: str = "outside the storage root"  # where the secrets are planted, for the report
    counts: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)

    def check(self, route: str, what: str, answer: Answer | None, *, refused: bool = False) -> None:
        """One answer: a 4xx must say why; none is a 5xx, a hang or carries a planted secret. `refused`:
        the request must be refused (a missing or wrong token)."""
        self.counts[(route, "tried")] += 1
        if answer is None:
            self.counts[(route, "hang")] += 1
            self.failures.append(f"{route}: {what}: no answer within {TIMEOUT} s")
            return
        if any(secret in answer.body for secret in self.secrets):
            self.counts[(route, "leak")] += 1
            self.failures.append(f"{route}: {what}: {answer.status} with the secret planted {self.outside}")
        if answer.status >= 500:
            self.counts[(route, "5xx")] += 1
            self.failures.append(
                f"{route}: {what}: {answer.status}: {answer.body[-600:].decode(errors='replace')}"
            )
        elif answer.status >= 400:
            text = answer.body.decode(errors="replace")
            clear = bool(text.strip()) and "Traceback" not in text
            self.counts[(route, "refused" if clear else "unclear")] += 1
            if not clear:
                self.failures.append(
                    f"{route}: {what}: {answer.status} without a message: {answer.body[:200]!r}"
                )
        else:
            self.counts[(route, "answered")] += 1
            if refused:
                self.failures.append(f"{route}: {what}: {answer.status}, not refused")

    def report(self) -> None:
        routes = sorted({r for r, _ in self.counts})
        total = collections.Counter[str]()
        for (_, outcome), n in self.counts.items():
            total[outcome] += n
        width = max(len(r) for r in routes) + 2
        outcomes = ("tried", "refused", "answered", "5xx", "hang", "unclear", "leak")
        lines = [
            f"{self.title}: {total['tried']} requests over {len(routes)} routes, {total['refused']} refused"
            f" cleanly (4xx with a message), {total['answered']} answered (2xx/3xx), {total['5xx']} answered"
            f" 5xx, {total['hang']} hung, {total['leak']} read {self.outside}",
            f"  {'route':<{width}}" + "".join(f"{o:>10}" for o in outcomes),
        ]
        lines += [f"  {r:<{width}}" + "".join(f"{self.counts[(r, o)]:>10}" for o in outcomes) for r in routes]
        report(*lines)

    def assert_clean(self) -> None:
        """Fails with the first two broken invariants of each route (all of them would be thousands)."""
        shown: collections.Counter[str] = collections.Counter()
        examples = []
        for failure in self.failures:
            route = failure.split(": ", 1)[0]
            shown[route] += 1
            if shown[route] <= 2:
                examples.append(failure)
        assert not self.failures, f"{len(self.failures)} broken invariants:\n" + "\n".join(examples)
