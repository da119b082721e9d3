"""The real Kueue on each control plane, for the tests of this directory.

`kueue` (session) is the directory `scripts/tools/kueue/build` builds (the manager and the module's
manifests, tests/support/kueue.py), built on first use; the fixture is named as its tool in
tests/support/toolbuild.py, so a cold run builds it early, at idle priority, and runs these tests last.

`kube_backend` (module; it overrides the root conftest's, so that `--backend` and the scheduling plugin know
these tests by the same parameter) is a control plane with the project's CRDs and Kueue installed on it, with
the `ray.io/rayjob` and `ray.io/raycluster` integrations:
- `localkube`: a private localkube (simulate mode), not the session's shared one, since Kueue's webhooks match
  every RayJob, RayCluster and pod written there; stopped with the module;
- `realkube`: the session's real control plane (its tests run one after another on one worker), Kueue's
  webhook server on `host_address()`; uninstalled at the module's end (webhook configurations first, then
  Kueue's objects, CRDs and namespace), so the realkube tests after these find the control plane as before.
The operator runs in each test's process (tests/integration/rayjob/harness.py), on the namespace it makes.

`ray_head` (module, per backend) is the real Ray head the RayJobs run on, its dashboard on the address the
control plane's service proxy will dial for the simulated head pod pinned to it (`localkube.io/pod-ip`):
127.0.0.1 on localkube, `host_address()` on realkube, whose API server proxies only to a global unicast
address and whose EndpointSlices refuse loopback.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import runreport, toolbuild
from support.hostaddress import host_address
from support.kueue import Kueue
from support.localkube_process import LocalKubeProcess
from support.ray_process import RayHead
from support.realkube_process import RealKubeProcess

CRD_DIR = Path(__file__).resolve().parents[3] / "deploy" / "crds"


@pytest.fixture(scope="session")
def kueue() -> Path:
    home, seconds = toolbuild.ensure("kueue")
    runreport.report(f"kueue: {home} ready in {seconds:.1f} s (built on first use)")
    return home


@pytest.fixture(scope="module", params=["localkube", pytest.param("realkube", marks=pytest.mark.realkube)])
def kube_backend(
    request: pytest.FixtureRequest, kueue: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalKubeProcess]:
    directory = tmp_path_factory.mktemp("kueue")
    if request.param == "realkube":
        server: LocalKubeProcess = request.getfixturevalue("realkube")
        manager = Kueue.install(kueue, server.kubeconfig, directory / "kueue", webhook_host=host_address())
        try:
            yield server
            assert manager.running(), f"Kueue exited during the tests:\n{manager.tail()}"
        finally:
            manager.uninstall()
        return
    server = LocalKubeProcess(directory / "localkube")
    server.start()
    try:
        server.apply_files(sorted(CRD_DIR.glob("*.yaml")))
        manager = Kueue.install(kueue, server.kubeconfig, directory / "kueue")
        try:
            yield server
            assert manager.running(), f"Kueue exited during the tests:\n{manager.tail()}"
        finally:
            manager.stop()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ray_head(kube_backend: LocalKubeProcess) -> Iterator[RayHead]:
    """As tests/e2e/conftest.py's, its dashboard where this backend's service proxy can reach it."""
    on_realkube = isinstance(kube_backend, RealKubeProcess)
    short = Path(tempfile.mkdtemp(prefix="ray-"))
    head = RayHead(short / "t", dashboard_host=host_address() if on_realkube else "127.0.0.1")
    head.temp_dir.mkdir()
    head.start()
    yield head
    head.stop()
    shutil.rmtree(short, ignore_errors=True)
