"""Shared fixtures: one localkube for the whole run, and private ones for tests that kill or restart.

`localkube` is session-scoped: started once, with the project's CRDs (`deploy/crds/*.yaml`, when present)
installed. Tests that share it must use their own namespaces or names. `localkube_factory(**kwargs)`
starts a private instance on a fresh data directory, or on `data_dir=` (other arguments as for
`LocalKubeProcess`), and kills it at the end of the test. `helm` is the real Helm, built on first use (see tests/helm.py); the build's or
look-up's time is printed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from helm import Helm
from localkube_process import LocalKubeProcess

REPO = Path(__file__).resolve().parent.parent
CRD_DIR = REPO / "deploy" / "crds"


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

    def start(data_dir: Path | None = None, **kwargs: Any) -> LocalKubeProcess:
        server = LocalKubeProcess(data_dir or tmp_path_factory.mktemp("localkube-private"), **kwargs)
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
