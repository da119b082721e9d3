"""ENABLE_RANDOM_POD_DELETE=true (upstream's opt-in): with autoscaling on, surplus pods are deleted at
random again, and the `ScaledWorkerGroup` Event says so. The module's operator is started with the variable
set (the other modules' operator runs without it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support.operator_process import OperatorProcess

from .conftest import Kube, service_account_kubeconfig
from .test_autoscaling import autoscaling_cluster, reconciled_with, replace_in_group, scale_events
from .test_lifecycle import names, wait_ready_with


@pytest.fixture(scope="module")
def operator(kube_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    directory = tmp_path_factory.mktemp("operator-random-delete")
    kubeconfig = service_account_kubeconfig(kube_backend, "kuberay-system", directory / "kubeconfig")
    env = {"ENABLE_RANDOM_POD_DELETE": "true"}
    process = OperatorProcess(kubeconfig, directory / "operator.log", env=env).start()
    try:
        yield process
    finally:
        process.stop()


async def test_surplus_pods_are_deleted_at_random_when_enabled(kube: Kube) -> None:
    await kube.create_cluster(autoscaling_cluster("rand", replicas=3))
    before = names(await wait_ready_with(kube, "rand", 3))
    await replace_in_group(kube, "rand", replicas=1)
    await reconciled_with(kube, "rand", 1)
    after = names(await wait_ready_with(kube, "rand", 1))
    gone = sorted(before - after)
    assert len(gone) == 2 and after < before
    assert (await scale_events(kube, "rand", 2))[-1] == (
        f"Worker group small: deleted 2 Pod(s) [{' '.join(gone)}]: at random, 3 running, 1 wanted (replicas 1)"
    )
