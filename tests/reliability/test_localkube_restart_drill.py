"""Drill: localkube killed (-9) and restarted on the same data directory and port in the middle of a scale-up.

The operator (throttled, so the scale-up is surely under way) loses every connection; its informers must
resume once the server is back. localkube runs with `--compact-keep 0`, so a restart begins with no history,
as kube-apiserver's watch cache does: a watch resumed from before the kill is answered 410 Gone and the
informer must relist. The drill shows both happened (the 410 seen by a watch of its own, the relist in the
operator's log), then checks the invariant: exactly the workers asked for, none made twice and taken back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reliability import invariants
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

pytestmark = pytest.mark.timers

NAMESPACE = "restart-drill"
WORKERS = 60


@pytest.mark.slow
def test_localkube_killed_mid_scale_up_the_operator_relists_and_ends_exact(
    localkube_factory: Callable[..., LocalKubeProcess], tmp_path: Path
) -> None:
    server = localkube_factory(extra_args=["--compact-keep", "0"])
    server.apply_files(invariants.CRDS)
    log = tmp_path / "operator.log"
    operator = OperatorProcess(server.kubeconfig, log, "--qps=20", "--burst=1").start()
    try:
        with server.client(timeout=30) as client:
            client.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
            # Older than anything the scale-up writes, so older than what the restart keeps.
            before = invariants.start_scale_up(client, NAMESPACE, "big", WORKERS)
        server.kill()
        server.start()
        with server.client(timeout=30) as client:
            with client.stream(
                "GET",
                invariants.clusters_path(NAMESPACE),
                params={"watch": "true", "resourceVersion": before},
            ) as watch:
                first = next(watch.iter_lines())
            assert '"code":410' in first.replace(" ", ""), first
            invariants.settle(client, NAMESPACE, {"big": WORKERS})
            assert not invariants.deleted_workers(client, NAMESPACE)
    finally:
        operator.stop()
    relists = [line for line in log.read_text().splitlines() if "is gone; relisting" in line]
    assert relists, "the operator never relisted after the restart"
