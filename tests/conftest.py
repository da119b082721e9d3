"""Shared fixtures: one localkube for the whole run, and private ones for tests that kill or restart.

`localkube` is session-scoped: started once, with the project's CRDs (`deploy/crds/*.yaml`, when present)
installed. Tests that share it must use their own namespaces or names. `localkube_factory(**kwargs)`
starts a private instance on a fresh data directory, or on `data_dir=` (other arguments as for
`LocalKubeProcess`), and kills it at the end of the test. `helm` is the real Helm, built on first use (see
tests/support/helm.py), and `cert_manager` the real cert-manager's directory (tests/support/certmanager_process.py);
the build's or look-up's time is reported (tests/support/runreport.py).

`realkube` is the real control plane (tests/support/realkube_process.py), session-scoped like `localkube`
and with the same CRDs; the first run builds the binaries into the shared cache (minutes, printed); later
runs reuse them. `kube_backend` runs a test once per backend `--backend` selects. Which backends run, the
order of the files and the workers they go to are the scheduling plugin's (tests/support/scheduling.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support import runreport, toolbuild
from support.agent_process import AgentProcess
from support.helm import Helm
from support.local_instance import take_down_shared
from support.localkube_process import LocalKubeProcess
from support.realkube_process import NODE_NAME, RealKubeProcess, provisioned_volumes

REPO = Path(__file__).resolve().parent.parent
CRD_DIR = REPO / "deploy" / "crds"

pytest_plugins = ("support.scheduling",)


@pytest.fixture(scope="session", params=["localkube", pytest.param("realkube", marks=pytest.mark.realkube)])
def kube_backend(request: pytest.FixtureRequest) -> LocalKubeProcess:
    """The control plane of a backend-aware test, which runs once per backend --backend selects: the session's
    `localkube` or `realkube` (both with the project's CRDs; realkube with localkube's node attached)."""
    server: LocalKubeProcess = request.getfixturevalue(request.param)
    return server


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    # pytest-xdist's controller, as each worker ends: the lines that worker reported.
    runreport.LINES.extend(node.workeroutput.get("report", ()))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if runreport.LINES:
        terminalreporter.section("report")
        for line in runreport.LINES:
            terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its reported lines go to the controller
        workeroutput["report"] = runreport.LINES
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


@pytest.fixture(scope="session")
def realkube(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealKubeProcess]:
    bin_dir, build_seconds = toolbuild.ensure("realkube")
    server = RealKubeProcess(tmp_path_factory.mktemp("realkube"), bin_dir)
    server.start()
    # localkube's node, attached as a kubelet would be: its own credentials, judged by the Node authorizer.
    node = AgentProcess(server.node_kubeconfig, server.data_dir / "agent.log", node_name=NODE_NAME)

    def stop() -> None:
        node.stop()
        server.stop()

    request.config.pluginmanager.getplugin("support.scheduling").stop_realkube_early(stop)
    try:
        node.start()
        server.apply_files(sorted(CRD_DIR.glob("*.yaml")))
        server.apply(provisioned_volumes(server.data_dir / "volumes"))
        server.wait_node_ready(NODE_NAME)
        runreport.report(f"realkube: binaries ready in {build_seconds:.1f} s, control plane and node up in "
                         f"{server.startup_seconds:.1f} s")  # fmt: skip
        yield server
    finally:
        stop()  # again, if the last test stopped them: both stops do nothing the second time


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
def cert_manager() -> Path:
    """The directory of the real cert-manager's controller and CRDs (tests/support/certmanager_process.py), built on
    first use; the fixture is named as its tool in tests/support/toolbuild.py, so a cold run builds it early."""
    home, seconds = toolbuild.ensure("cert_manager")
    runreport.report(f"cert-manager: {home} ready in {seconds:.1f} s (built on first use)")
    return home


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    tool, seconds = Helm.install(tmp_path_factory.mktemp("helm"))
    runreport.report(f"helm: {tool.binary} ready in {seconds:.1f} s (built on first use)")
    return tool
