"""One localkube for this package's tests that stands in for Volcano and scheduler-plugins
(`--schedulers default-scheduler,volcano,scheduler-plugins-scheduler`: their pods are gang-scheduled,
YuniKorn's and KAI's stay Pending as where those schedulers do not run), with the ray.io CRDs and the
foreign CRDs of `crds/` installed. Each test runs its own in-process operator (the batch scheduler is
operator-wide) in a namespace of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.localkube_process import LocalKubeProcess

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SCHEDULERS = "default-scheduler,volcano,scheduler-plugins-scheduler"


@pytest.fixture(scope="package")
def gang_localkube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    server = LocalKubeProcess(
        tmp_path_factory.mktemp("localkube-gang"), extra_args=["--schedulers", SCHEDULERS]
    )
    server.start()
    try:
        server.apply_files(
            [*sorted((REPO / "deploy" / "crds").glob("*.yaml")), *sorted((HERE / "crds").glob("*.yaml"))]
        )
        yield server
    finally:
        server.stop()
