"""How pytest runs this suite: which control planes the backend-aware tests run on, in what order the files
start, and which worker runs what. A pytest plugin, loaded by the root conftest (`pytest_plugins`).

`--backend localkube|realkube|both` chooses which backends run (default: both where Go can build the
binaries, else localkube). Tests that need the real control plane are marked `realkube` (`-m realkube`
selects them); without it in `--backend` they are skipped. A run that finds Helm or the control plane not
built yet (`toolbuild.py`) starts their builds at collection, puts the tests that need them last and adds
the build's bound to theirs.

Collection puts the tests on the real control plane first, then the files holding a `slow` test, longest bound
first, each CPU-heavy file followed by one marked `timers` (its tests mostly wait), then the rest in pytest's
order: pytest-xdist, as scripts/test runs it (`--dist loadfile --no-loadscope-reorder`), hands files to workers
in that order, so no minutes-long file starts last and keeps one worker busy after the others are done, and
the waiting files run beside the busy ones (together at the end, they left the machine half idle for minutes).
Every test whose node id names realkube (its `kube_backend`, its file) goes to one worker, as if they were one
file (`pytest_xdist_make_scheduler`), and that worker stops the control plane after the last of them
(`pytest_runtest_teardown`, through the stop the `realkube` fixture gives `stop_realkube_early`): a control
plane idles at a fifth of a core (etcd, kube-apiserver, the controllers, the node agent), and one per worker,
kept to the end, costs the run a minute.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support import toolbuild

BACKENDS = ("localkube", "realkube", "containers")
# What each --backend choice runs; `both` is the two control planes, `all` adds the containers backend.
CHOICES = {
    "localkube": ("localkube",),
    "realkube": ("realkube",),
    "containers": ("containers",),
    "both": ("localkube", "realkube"),
    "all": BACKENDS,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    go = shutil.which("go") or Path("/usr/local/go/bin/go").exists()
    # The containers backend makes a network namespace, cgroups and mounts: root only.
    default = ("all" if os.geteuid() == 0 else "both") if go else "localkube"
    parser.addoption(
        "--backend",
        choices=tuple(CHOICES),
        default=default,
        help="backend(s) the backend-aware tests run on: localkube, realkube (the real control plane), "
        "containers (it with a real kubelet on containerd, root only), both (the first two) or all "
        "(default: all as root where Go can build them, both without root, localkube without Go)",
    )


# Which tools were not built when the run began: decided once, by pytest-xdist's controller (or the one
# process), and inherited by its workers, so that each collects the same order.
COLD_TOOLS = "KUBERAY_TESTS_COLD_TOOLS"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "realkube: needs the real control plane (see --backend)")
    config.addinivalue_line(
        "markers", "containers: needs the containers backend, a real kubelet on containerd (see --backend)"
    )
    config.addinivalue_line(
        "markers", "timers: a slow test that mostly waits on timers (leases, timeouts, TTLs), not the CPU"
    )
    # A run started in the background of a non-interactive shell (`cmd &`) inherits SIGINT and SIGQUIT
    # ignored, and so does every kubectl and process it starts: the tests that interrupt one as a user's
    # Ctrl-C does then wait on a process that cannot be interrupted (kubectl exec, kubectl ray session).
    for number in (signal.SIGINT, signal.SIGQUIT):
        if signal.getsignal(number) == signal.SIG_IGN:
            signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)
    if COLD_TOOLS not in os.environ:
        os.environ[COLD_TOOLS] = ",".join(toolbuild.cold())


def backends(config: pytest.Config) -> tuple[str, ...]:
    return CHOICES[config.getoption("--backend")]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = backends(config)
    skip = pytest.mark.skip(reason="backend not selected (--backend)")
    for item in items:
        backend = _backend(item)
        if backend is not None and backend not in chosen:
            item.add_marker(skip)
        if backend != CONTAINERS and (backend == REALKUBE) != _on_realkube(item.nodeid):
            # The scheduler and the control plane's early stop know a test by its id alone.
            raise pytest.UsageError(f"{item.nodeid}: a test on the real control plane, and only one, has "
                                    f"{REALKUBE!r} in its node id (its parameter, file or directory)")  # fmt: skip
    default = float(config.getini("timeout") or 0)
    waiting = _wait_for_builds(items, default, start=not config.option.collectonly)
    rank = _slow_files_ranked(items, default)
    items.sort(
        key=lambda item: (
            item.path in waiting,
            not _on_realkube(item.nodeid),
            not _on_containers(item.nodeid),
            rank.get(item.path, len(rank)),
        )
    )


def _slow_files_ranked(items: list[pytest.Item], default: float) -> dict[Path, int]:
    """The files holding a `slow` test in the order they should start: those that busy the CPU (real Ray
    clusters, mostly) longest bound first, with a `timers` file after each, so that the tests waiting on
    timers run beside the busy ones rather than together at the end, leaving the machine idle."""
    bound: dict[Path, float] = {}
    timers: set[Path] = set()
    for item in items:
        if item.get_closest_marker("slow"):
            bound[item.path] = max(bound.get(item.path, 0.0), _allowed(item, default))
        if item.get_closest_marker("timers"):
            timers.add(item.path)
    busy = sorted((path for path in bound if path not in timers), key=lambda path: -bound[path])
    waits = sorted((path for path in bound if path in timers), key=lambda path: -bound[path])
    order: list[Path] = []
    for pair in itertools.zip_longest(busy, waits):
        order.extend(path for path in pair if path is not None)
    return {path: index for index, path in enumerate(order)}


REALKUBE = "realkube"
CONTAINERS = "containers"


def _on_realkube(nodeid: str) -> bool:
    return REALKUBE in nodeid


def _on_containers(nodeid: str) -> bool:
    """A test of tests/containers/, on the containers backend: one per machine (its network namespace has one
    name), so they all run on one worker."""
    return nodeid.startswith(f"tests/{CONTAINERS}/")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's whole-file scheduling, with the tests on the real control plane as one file. Only node
    ids reach the controller, so a test is recognised by its id: a `[realkube]` parameter or a file named
    for it (tests/differential/test_localkube_vs_realkube.py, tests/integration/realkube/)."""
    from xdist.scheduler import LoadFileScheduling

    class RealkubeTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if _on_containers(nodeid):
                return CONTAINERS
            scope: str = REALKUBE if _on_realkube(nodeid) else super()._split_scope(nodeid)
            return scope

    return RealkubeTogether(config, log)


def _backend(item: pytest.Item) -> str | None:
    """The control plane a backend-aware test runs on (its `kube_backend`, or realkube for a `realkube` test)."""
    callspec = getattr(item, "callspec", None)
    backend: str | None = callspec.params.get("kube_backend") if callspec else None
    if backend is None and item.get_closest_marker(CONTAINERS):
        return CONTAINERS
    return backend or (REALKUBE if item.get_closest_marker(REALKUBE) else None)


def _allowed(item: pytest.Item, default: float) -> float:
    """The item's pytest-timeout bound."""
    marker = item.get_closest_marker("timeout")
    return float(marker.args[0]) if marker and marker.args else default


def _wait_for_builds(items: list[pytest.Item], default: float, *, start: bool) -> set[Path]:
    """Starts (with `start`) the build of each cold tool a selected test needs; those tests get the build's
    time added to their bound. Returns their files, which go last: the build runs while the other files do."""
    cold = set(filter(None, os.environ.get(COLD_TOOLS, "").split(",")))
    waiting: set[Path] = set()
    started: set[str] = set()
    for item in items:
        if item.get_closest_marker("skip"):
            continue
        needs = {tool for tool in cold if tool in getattr(item, "fixturenames", ())}
        backend = _backend(item)  # a parametrised control plane is looked up at run time, not a fixture name
        if backend in cold:
            needs.add(backend)
        if not needs:
            continue
        item.add_marker(pytest.mark.timeout(_allowed(item, default) + toolbuild.BUILD_TIMEOUT), append=False)
        waiting.add(item.path)
        for tool in needs - started if start else ():
            toolbuild.start(tool)
            started.add(tool)
    return waiting


# The stops of the session's control plane and of the containers backend, for the hook to call after the last
# test on each (the fixtures call them again at the session's end, when a second stop does nothing).
_early_stops: dict[str, list[Callable[[], None]]] = {REALKUBE: [], CONTAINERS: []}


def stop_realkube_early(stop: Callable[[], None]) -> None:
    """Has `stop` called once the last test on the real control plane of this worker is done."""
    _early_stops[REALKUBE].append(stop)


def stop_containers_early(stop: Callable[[], None]) -> None:
    """Has `stop` called once the last test on the containers backend of this worker is done."""
    _early_stops[CONTAINERS].append(stop)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # The tests on the real control plane run together (one scheduling unit), so once the next test is not one
    # of them, none is left on this worker: the session fixture's processes stop now, not at the run's end.
    # Not while the next test is in the same file: run without xdist, a file's tests on both backends share a
    # worker, and its module fixture for the real control plane is finalized only when the next test's
    # parameter replaces it, after this teardown. The containers backend's tests are one unit too.
    for group, on_it in ((REALKUBE, _on_realkube), (CONTAINERS, _on_containers)):
        stops = _early_stops[group]
        if stops and not (nextitem and (on_it(nextitem.nodeid) or nextitem.path == item.path)):
            stops.pop()()
