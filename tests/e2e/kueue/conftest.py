"""The real Kueue against localkube, for the tests of this directory.

`kueue` (session) is the directory `scripts/tools/kueue/build` builds (the manager and the module's
manifests, tests/support/kueue.py), built on first use; the fixture is named as its tool in
tests/support/toolbuild.py, so a cold run builds it early, at idle priority, and runs these tests last.

`kueue_localkube` (module) is a private localkube (simulate mode) with the project's CRDs and Kueue
installed on it, with the `ray.io/rayjob` and `ray.io/raycluster` integrations: Kueue's webhooks match
every RayJob, RayCluster and pod written there, so it is not the session's shared `localkube`. The operator
runs in each test's process (tests/integration/rayjob/harness.py), on the namespace it makes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support import runreport, toolbuild
from support.kueue import Kueue
from support.localkube_process import LocalKubeProcess

CRD_DIR = Path(__file__).resolve().parents[3] / "deploy" / "crds"


@pytest.fixture(scope="session")
def kueue() -> Path:
    home, seconds = toolbuild.ensure("kueue")
    runreport.report(f"kueue: {home} ready in {seconds:.1f} s (built on first use)")
    return home


@pytest.fixture(scope="module")
def kueue_localkube(kueue: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    directory = tmp_path_factory.mktemp("kueue")
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
