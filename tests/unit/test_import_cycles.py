"""No module of src/ imports a module that imports it back, directly or around a longer loop.

The import graph is read from the source with `ast`, every import counted wherever it stands (module level,
inside functions, under `TYPE_CHECKING`): a function-level import hides a cycle from Python's import
machinery but not from a reader, and the next refactoring turns it into an ImportError. `from pkg import x`
is an edge to the module `pkg.x` when that is a module, else to `pkg` (its `__init__`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules(src: Path) -> dict[str, Path]:
    modules = {}
    for path in src.rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


@functools.cache
def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Each module under `src` and the modules under `src` it imports (read once per tree: not to be changed)."""
    modules = _modules(src)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = list(_imported(node, module, is_package))
            if isinstance(node, ast.ImportFrom):
                # `from pkg import x`: the submodule pkg.x if x is one, else pkg itself.
                base, members = names[0], names[1:]
                submodules = [m for m in members if m in modules]
                edges.update(submodules)
                if len(submodules) < len(members) and base in modules:
                    edges.add(base)
            else:
                edges.update(name for name in names if name in modules)
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_imports_wherever_they_stand() -> None:
    graph = import_graph()
    assert "kubesemantics.quantity" in graph["localkube.controllers.scheduling"]
    assert {"kubesemantics.cellib", "kubesemantics.goparse"} <= graph["localkube.admission.validation"]
    assert {"localkube.server.rest", "kubesemantics.selectors"} <= graph["localkube.server.subresources"]


def test_a_cycle_through_a_function_or_type_checking_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "x.py").write_text("def f():\n    from pkg import y\n")
    (package / "y.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import f\n"
    )
    (package / "z.py").write_text("import pkg.x\n")
    graph = import_graph(tmp_path)
    assert graph == {"pkg": set(), "pkg.x": {"pkg.y"}, "pkg.y": {"pkg.x"}, "pkg.z": {"pkg.x"}}
    assert cycles(graph) == [["pkg.x", "pkg.y"]]


def test_a_longer_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_src_has_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], "modules that import each other, directly or around a loop: " + "; ".join(
        " <-> ".join(component) for component in found
    )
