"""Nothing suspends inside a store transaction.

localkube runs on one event loop; what keeps a read and the write that depends on it atomic is that no
`await` (or `yield`) stands between them. Two kinds of transaction are held to that, by reading the source:
- a `with ...transaction():` block (the store's SQLite transaction): no await, async for, async with or
  yield inside it, in any module of localkube;
- a REST verb (`localkube.server.rest`): each reads objects, decides and writes, so the verb modules
  define no coroutine and never await: a request's verb runs to completion before another's starts.
"""

from __future__ import annotations

import ast
from pathlib import Path

LOCALKUBE = Path(__file__).resolve().parents[3] / "src" / "localkube"
REST_VERBS = sorted((LOCALKUBE / "server" / "rest").glob("*.py"))
_SUSPENDING = (ast.Await, ast.AsyncFor, ast.AsyncWith, ast.Yield, ast.YieldFrom)


def _is_transaction(item: ast.withitem) -> bool:
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return "transaction" in name.lower()


def suspensions_in_transactions(source: str) -> list[int]:
    """The lines where something suspends inside a `with ...transaction():` block."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.With | ast.AsyncWith) and any(_is_transaction(i) for i in node.items):
            found.extend(
                inner.lineno
                for statement in node.body
                for inner in ast.walk(statement)
                if isinstance(inner, _SUSPENDING)
            )
    return found


def coroutines(source: str) -> list[int]:
    """The lines of coroutine definitions and of anything that suspends one."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith)
    ]


def test_the_checks_see_what_they_forbid() -> None:
    inside = "async def f(store):\n    with store._transaction():\n        await g()\n"
    assert suspensions_in_transactions(inside) == [3]
    after = "async def f(store):\n    with store.transaction():\n        pass\n    await g()\n"
    assert suspensions_in_transactions(after) == []
    assert coroutines("class R:\n    async def get(self):\n        pass\n") == [2]


def test_the_store_transactions_exist() -> None:
    # The check is only worth something while transactions are spelled as it looks for them.
    source = (LOCALKUBE / "storage" / "store.py").read_text()
    assert any(
        isinstance(node, ast.With) and any(_is_transaction(i) for i in node.items)
        for node in ast.walk(ast.parse(source))
    )


def test_nothing_suspends_inside_a_store_transaction() -> None:
    found = {
        str(path.relative_to(LOCALKUBE)): lines
        for path in sorted(LOCALKUBE.rglob("*.py"))
        if (lines := suspensions_in_transactions(path.read_text()))
    }
    assert found == {}


def test_the_rest_verbs_never_suspend() -> None:
    assert len(REST_VERBS) > 1
    found = {path.name: lines for path in REST_VERBS if (lines := coroutines(path.read_text()))}
    assert found == {}
