"""Nothing suspends inside a REST verb.

localkube runs on one event loop; what keeps a read and the write that depends on it atomic is that no
`await` (or `yield`) stands between them. Each verb of `localkube.server.rest` reads objects, decides and
writes, so the verb modules define no coroutine and never await: a request's verb runs to completion
before another's starts. (The store's SQLite commits run on a thread of their own, after the verb has
changed the live state; a reply waits for them outside the verb.)
"""

from __future__ import annotations

import ast
from pathlib import Path

LOCALKUBE = Path(__file__).resolve().parents[3] / "src" / "localkube"
REST_VERBS = sorted((LOCALKUBE / "server" / "rest").glob("*.py"))


def coroutines(source: str) -> list[int]:
    """The lines of coroutine definitions and of anything that suspends one."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith)
    ]


def test_the_check_sees_what_it_forbids() -> None:
    assert coroutines("class R:\n    async def get(self):\n        pass\n") == [2]
    assert coroutines("def f(g):\n    return g()\n") == []


def test_the_rest_verbs_never_suspend() -> None:
    assert len(REST_VERBS) > 1
    found = {path.name: lines for path in REST_VERBS if (lines := coroutines(path.read_text()))}
    assert found == {}
