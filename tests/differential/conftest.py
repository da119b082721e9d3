"""Fixtures of the differential tier: one Runner per backend (the session's localkube and realkube, the Widget
CRD installed on both), and the tally the run reports (tests/support/runreport.py): pairs compared, differences
known and differences left."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from differential.harness import TALLY, Runner
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.realkube_process import RealKubeProcess
from support.runreport import report

TESTDATA = Path(__file__).parent / "testdata"

if shutil.which("kubectl") is None:
    pytest.skip("kubectl is not on the PATH", allow_module_level=True)


@pytest.fixture(scope="session")
def runners(
    localkube: LocalKubeProcess, realkube: RealKubeProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Runner, Runner]]:
    pair = []
    for server in (localkube, realkube):
        server.apply_files([TESTDATA / "widgets-crd.yaml"])
        pair.append(Runner(server, tmp_path_factory.mktemp("differential")))
    _wait_established(pair)
    yield pair[0], pair[1]
    for runner in pair:
        runner.close()


def _wait_established(pair: list[Runner]) -> None:
    eventually(
        lambda: all(
            runner.client.get("/apis/diff.kuberay.io/v1/widgets").status_code == 200 for runner in pair
        ),
        30,
        "the widgets CRD served by both",
        every=0.2,
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    if TALLY.pairs:
        report(
            "differential: localkube against kube-apiserver: "
            f"{TALLY.pairs} request/response pairs compared; {len(TALLY.known)} known differences; "
            f"{len(TALLY.left)} differences left",
            *(f"  left: {line}" for line in TALLY.left),
        )
