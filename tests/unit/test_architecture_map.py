"""The maps inside the repository stay true: ARCHITECTURE.md names every package of `src/` and no package
that is gone; tests/README.md names every helper module of `tests/support/` and none that is gone.

Read from the files' text: a package is a directory with `__init__.py` under `src/kuberay`, `src/localkube`
or `src/kubesemantics`, named in backticks by its dotted path (`kuberay.controllers.rayjob`) or its path
(`src/kuberay/controllers/rayjob/`, `localkube/server/rest`). A module ARCHITECTURE.md names by a path
(`runtime/client.py`) must exist too.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
TOP_LEVEL = ("kuberay", "localkube", "kubesemantics")
SUPPORT = ROOT / "tests" / "support"

# A backticked name of src/ in either spelling, e.g. `kuberay.api.validation` or `src/localkube/server/`.
_SRC_NAME = re.compile(
    r"`(?:src/)?((?:kuberay|localkube|kubesemantics)(?:(?:\.|/)[a-z_][a-z0-9_]*)*(?:\.py|/)?)`"
)
_BACKTICKED = re.compile(r"`([^`\n]+)`")


def packages() -> set[str]:
    """Every package of src/, dotted."""
    found = set()
    for top in TOP_LEVEL:
        for init in (SRC / top).rglob("__init__.py"):
            found.add(".".join(init.parent.relative_to(SRC).parts))
    return found


def named_in(text: str) -> set[str]:
    """The names of src/ a text gives in backticks, as dotted paths (a module keeps its `.py`)."""
    named = set()
    for match in _SRC_NAME.finditer(text):
        name = match.group(1).rstrip("/")
        if name.endswith(".py"):
            named.add(name[: -len(".py")].replace("/", ".") + ".py")
        else:
            named.add(name.replace("/", "."))
    return named


def exists(dotted: str) -> bool:
    """A package, a module, or a name inside a module (`kuberay.runtime.controller.Result` is not one)."""
    if dotted.endswith(".py"):
        return (SRC / (dotted[: -len(".py")].replace(".", "/") + ".py")).is_file()
    path = SRC / dotted.replace(".", "/")
    return (path / "__init__.py").is_file() or path.with_suffix(".py").is_file()


def architecture() -> str:
    return (ROOT / "ARCHITECTURE.md").read_text()


def test_every_package_of_src_is_on_the_map():
    missing = sorted(packages() - named_in(architecture()))
    assert not missing, f"packages of src/ that ARCHITECTURE.md does not name: {missing}"


def test_the_map_names_nothing_of_src_that_is_gone():
    gone = sorted(name for name in named_in(architecture()) if not exists(name))
    assert not gone, f"ARCHITECTURE.md names packages or modules that src/ no longer has: {gone}"


def test_every_module_the_map_names_exists():
    """A module named by a path relative to its package (`runtime/client.py`, `server/rest/create.py`) or to
    the repository (`tests/unit/test_exceptions.py`) is a file of src/ or of the repository."""
    files = {path.relative_to(SRC).as_posix() for path in SRC.rglob("*.py")}
    gone = sorted(
        name
        for name in set(_BACKTICKED.findall(architecture()))
        if re.fullmatch(r"[a-z0-9_/]+\.py", name)
        and not (ROOT / name).is_file()
        and not any(file == name or file.endswith("/" + name) for file in files)
    )
    assert not gone, f"ARCHITECTURE.md names modules that are gone: {gone}"


def test_the_finder_reads_both_spellings():
    text = "`kuberay.api`, `src/localkube/server/rest/`, `localkube/storage/store.py`, `kubesemantics`"
    assert named_in(text) == {
        "kuberay.api",
        "localkube.server.rest",
        "localkube.storage.store.py",
        "kubesemantics",
    }
    assert exists("localkube.storage.store.py") and exists("kuberay.rayresources")
    assert not exists("kuberay.gone")


def support_modules() -> set[str]:
    return {path.stem for path in SUPPORT.glob("*.py") if path.stem != "__init__"}


def support_table() -> list[str]:
    """The rows of tests/README.md's table of support/ helpers (the section after its heading)."""
    text = (ROOT / "tests" / "README.md").read_text()
    section = text.split("## `support/`", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_every_support_module_is_in_the_tests_readme():
    listed = {name for row in support_table() for name in _BACKTICKED.findall(row.split("|")[1])}
    missing = sorted(support_modules() - listed)
    assert not missing, f"tests/support modules that tests/README.md does not list: {missing}"


def test_the_tests_readme_lists_no_support_module_that_is_gone():
    listed = {name for row in support_table() for name in _BACKTICKED.findall(row.split("|")[1])}
    gone = sorted(listed - support_modules())
    assert not gone, f"tests/README.md lists tests/support modules that are gone: {gone}"
