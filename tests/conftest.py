"""Shared fixtures: one localkube for the whole run, and private ones for tests that kill or restart.

`localkube` is session-scoped: started once, with the project's CRDs (`deploy/crds/*.yaml`, when present)
installed. Tests that share it must use their own namespaces or names. `localkube_factory(**kwargs)`
starts a private instance on a fresh data directory (arguments as for `LocalKubeProcess`) and kills it
at the end of the test. `helm` is the real Helm, built on first use (see tests/helm.py); the build's or
look-up's time is printed.

Collection puts the files holding a `slow` test first, longest bound first (otherwise in pytest's order): pytest-xdist, as
scripts/test runs it (`--dist loadfile --no-loadscope-reorder`), hands files to workers in that order, so
no minutes-long file starts last and keeps one worker busy after the others are done.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from helm import Helm
from local_instance import take_down_shared
from localkube_process import LocalKubeProcess

REPO = Path(__file__).resolve().parent.parent
CRD_DIR = REPO / "deploy" / "crds"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Among the slow files, those whose tests are allowed longest (pytest-timeout's bound) go first.
    default = float(config.getini("timeout") or 0)
    bound: dict[Path, float] = {}
    for item in items:
        if item.get_closest_marker("slow"):
            marker = item.get_closest_marker("timeout")
            allowed = float(marker.args[0]) if marker and marker.args else default
            bound[item.path] = max(bound.get(item.path, 0.0), allowed)
    items.sort(key=lambda item: (item.path not in bound, -bound.get(item.path, 0.0)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    # pytest-xdist's controller, after every worker has ended: the instances the workers shared (its base
    # directory is theirs' parent).
    if session.config.pluginmanager.has_plugin("dsession"):
        take_down_shared(session.config._tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def localkube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    server = LocalKubeProcess(tmp_path_factory.mktemp("localkube"))
    server.start()
    try:
        server.apply_files(sorted(CRD_DIR.glob("*.yaml")))
        yield server
    finally:
        server.stop()


@pytest.fixture
def localkube_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., LocalKubeProcess]]:
    started: list[LocalKubeProcess] = []

    def start(**kwargs: Any) -> LocalKubeProcess:
        server = LocalKubeProcess(tmp_path_factory.mktemp("localkube-private"), **kwargs)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.kill()


@pytest.fixture(scope="session")
def helm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    tool, seconds = Helm.install(tmp_path_factory.mktemp("helm"))
    # Shown even under output capture: a first build takes minutes, and CI's log should say so.
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\nhelm: {tool.binary} ready in {seconds:.1f} s (built on first use)")
    return tool
