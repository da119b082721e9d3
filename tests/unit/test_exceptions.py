"""Each package's errors derive from the package's root, the roots from their top-level package's root
(`kuberay.errors` and `localkube.errors` describe the scheme), and no two exception classes of src/ share a
name.

The class statements are read from the source text (importing every module would cost the tier seconds,
parsing it all half a second): a class is an exception when one of its bases, followed by name through the
classes of src/, is a builtin exception. That the names are unique is what makes following by name sound.
"""

from __future__ import annotations

import builtins
import re
from collections import Counter
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

# The root of each package that raises errors of its own; a package of src/ absent here may not define any.
ROOTS = {
    "kuberay": "KubeRayError",
    "kuberay.api": "RayApiError",
    "kuberay.apiserver": "ApiServerError",
    "kuberay.builders": "BuildError",
    "kuberay.controllers": "ReconcileError",
    "kuberay.history": "HistoryServerError",
    "kuberay.kubectl": "KubectlPluginError",
    "kuberay.local": "LocalModeError",
    "kuberay.operator": "SettingsError",
    "kuberay.rayclient": "DashboardError",
    "kuberay.runtime": "ControllerRuntimeError",
    "kuberay.schedulers": "SchedulerPluginError",
    "kubesemantics": "SemanticsError",
    "localkube": "LocalkubeError",
    "localkube.admission": "AdmissionControlError",
    "localkube.controllers": "ControllerManagerError",
    "localkube.node": "NodeError",
    "localkube.patch": "PatchingError",
    "localkube.server": "ServingError",
    "localkube.storage": "StoreError",
}

# Scripts of the standard library alone (run as `python -I -S <file>`), whose errors cannot derive from a root.
STANDALONE = {"localkube.node.mountns"}

_BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


# A class statement with its bases, which may span lines (a base is a name or a dotted name, a subscript at
# most: no parentheses); a keyword such as `metaclass=` is read as a base that names no class.
_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^()]*)\)[ \t]*:", re.MULTILINE)


@cache
def _classes() -> list[tuple[str, str, tuple[str, ...]]]:
    """(module, class name, base names) of every class of src/ that has bases; `errors.ServingError` names the
    class `ServingError`."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for name, bases in _CLASS.findall(path.read_text(encoding="utf-8")):
            names = (base.split("[")[0].strip().rsplit(".", 1)[-1] for base in bases.split(","))
            found.append((module, name, tuple(base for base in names if base)))
    return found


def _exceptions() -> dict[tuple[str, str], set[str]]:
    """Each exception class of src/, by (module, name), with the names of all its ancestors."""
    bases_by_name: dict[str, set[str]] = {}
    for _, name, bases in _classes():
        bases_by_name.setdefault(name, set()).update(bases)

    def ancestors(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found = set()
        for base in bases_by_name.get(name, set()) - seen:
            found |= {base} | ancestors(base, seen | {name})
        return found

    exceptions = {}
    for module, name, _ in _classes():
        lineage = ancestors(name)
        if lineage & _BUILTIN_EXCEPTIONS:
            exceptions[module, name] = lineage
    return exceptions


def _packages(module: str) -> list[str]:
    """The packages a module lies in that may have a root: its top-level package and the one below it."""
    parts = module.split(".")
    packages = [parts[0]]
    if len(parts) > 1 and (SRC / parts[0] / parts[1]).is_dir():
        packages.append(".".join(parts[:2]))
    return packages


def test_the_reading_finds_the_exceptions_it_must() -> None:
    exceptions = _exceptions()
    assert ("kuberay.runtime.errors", "NotFoundError") in exceptions
    assert ("localkube.server.protobuf", "_Malformed") in exceptions
    assert ("kuberay.runtime.resources", "Resource") not in exceptions


def test_no_two_exception_classes_share_a_name() -> None:
    names = Counter(name for _, name in _exceptions())
    shared = {name: [m for m, n in _exceptions() if n == name] for name, count in names.items() if count > 1}
    assert not shared, f"exception classes of the same name: {shared}"


def test_each_error_derives_from_the_roots_of_its_packages() -> None:
    strays = []
    for (module, name), lineage in _exceptions().items():
        for package in _packages(module) if module not in STANDALONE else ():
            root = ROOTS.get(package)
            if root is None:
                strays.append(f"{module}.{name}: {package} has no root in ROOTS (give it one)")
            elif name != root and root not in lineage:
                strays.append(f"{module}.{name} does not derive from {package}'s root {root}")
    assert not strays, "\n".join(strays)


def test_each_root_is_defined_where_its_package_is() -> None:
    defined = {(module, name) for module, name in _exceptions()}
    for package, root in ROOTS.items():
        assert any(name == root and module.startswith(package) for module, name in defined), (package, root)


def test_the_standalone_scripts_import_nothing_of_src() -> None:
    for module in STANDALONE:
        text = (SRC / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        imports = re.findall(r"^\s*(?:from|import)\s+(\w+)", text, re.MULTILINE)
        assert not set(imports) & set(ROOTS), (
            f"{module} runs as a script and can import only the standard library"
        )
