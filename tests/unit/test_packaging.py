"""pyproject.toml declares what src/ imports and nothing it does not (an import scan), and is the one
version source."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import kuberay
import localkube

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
OWN = {init.parent.name for init in (REPO / "src").glob("*/__init__.py")}
# Declared without an import statement, each for a reason.
NOT_IMPORTED = {
    "wsproto": "uvicorn's WebSocket implementation, which localkube's runner selects by name",
    "protobuf": "imported as google.protobuf: the scan sees only `google`, a namespace several distributions share",
}
# Imported only where an optional extra is needed, from that extra.
EXTRA_IMPORTS = {
    "ray": ("process", "Ray's job SDK, which `kubectl ray job submit` imports when it runs"),
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    return {
        _canonical(re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0])
        for spec in PYPROJECT["project"]["dependencies"]
    }


def _imported_modules() -> set[str]:
    modules = set()
    for path in (REPO / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.partition(".")[0])
    return modules - OWN - set(sys.stdlib_module_names) - {"__future__"}


@functools.cache
def _imported_distributions() -> frozenset[str]:
    """The distributions that install what src/ imports (lightkube's package is shared with
    lightkube-models, so a distribution named as the module wins)."""
    installers = importlib.metadata.packages_distributions()  # a scan of every installed distribution

    def distribution(module: str) -> str:
        candidates = installers[module]
        return _canonical(module if _canonical(module) in map(_canonical, candidates) else candidates[0])

    return frozenset(distribution(module) for module in _imported_modules())


def test_every_imported_distribution_is_declared() -> None:
    assert _imported_distributions() - _declared() == set(EXTRA_IMPORTS)
    for distribution, (extra, _why) in EXTRA_IMPORTS.items():
        assert any(
            spec.startswith(distribution) for spec in PYPROJECT["project"]["optional-dependencies"][extra]
        )


def test_every_declared_distribution_is_imported() -> None:
    assert _declared() - _imported_distributions() == set(NOT_IMPORTED)


def test_one_version_source() -> None:
    version = PYPROJECT["project"]["version"]
    assert kuberay.__version__ == localkube.__version__ == importlib.metadata.version("kuberay") == version
