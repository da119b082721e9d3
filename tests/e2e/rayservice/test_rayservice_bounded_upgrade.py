"""A RayService upgrade bounded by RAYSERVICE_UPGRADE_TIMEOUT_SECONDS on real Ray Serve, after an
application that cannot be imported: Serve's own import error in the Ready condition, then an upgrade to a
cluster that cannot import the application, abandoned once the bound passes while the old cluster serves.

The bound is in the operator's environment: a user exports it before `kuberay local up`, so the test runs on
a second instance started that way (its own file, so it runs beside the session instance's RayService test
rather than after it).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator

import pytest

from e2e.rayservice.users import UsersService, rayservice, serve_config, set_cluster_env
from support.eventually import eventually
from support.local_instance import LocalInstance

pytestmark = [
    pytest.mark.slow,
    # Each test starts two or three real Ray clusters one after the other: minutes on a loaded machine.
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="several Ray clusters side by side need root (pod netns)"),
]


@pytest.fixture
def bounded_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalInstance]:
    """A second `kuberay local up --node-mode process --port 0`, with RAYSERVICE_UPGRADE_TIMEOUT_SECONDS
    exported before it, as a user sets the operator's environment. The bound leaves the new cluster time to
    start Ray and report its import error first, even with the suite's workers loading the machine."""
    with LocalInstance(
        tmp_path_factory.mktemp("local") / "bounded", "--node-mode", "process", "--port", "0",
        env={"RAYSERVICE_UPGRADE_TIMEOUT_SECONDS": "150"},
    ) as local:  # fmt: skip
        yield local


async def test_an_import_error_and_a_bounded_upgrade_that_cannot_finish(
    bounded_local: LocalInstance, user_service: Callable[..., Awaitable[UsersService]]
) -> None:
    broken = serve_config(import_path="kuberay_no_such_module:app")
    service = await user_service(bounded_local, "rayservice-bounded", rayservice("fragile", config=broken))
    # Serve's own message for the failed import, in the Ready condition.
    obj = await service.wait_condition("Ready", 400, text="kuberay_no_such_module")
    ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "DEPLOY_FAILED" in ready["message"]

    await service.apply(lambda o: o["spec"].update(serveConfigV2=serve_config()))
    ready = await service.wait_condition("Ready", 300, status="True")
    first = ready["status"]["activeServiceStatus"]["rayClusterName"]
    assert await eventually(service.answer, 120, "an answer", every=0.5) == "hello v1"
    # The new cluster cannot import the application (its PYTHONPATH misses the module): it never serves.
    await service.apply(lambda o: set_cluster_env(o, "PYTHONPATH", "/nonexistent"))
    stuck = await service.wait_condition("UpgradeInProgress", 400, text="kuberay_echo")
    pending = stuck["status"]["pendingServiceStatus"]["rayClusterName"]
    await service.wait_condition("UpgradeInProgress", 300, text="abandoned")
    await eventually(lambda: service.clusters_are([first]), 120, f"{pending} deleted", every=0.5)
    assert await service.answer() == "hello v1"
    final = await service.get()
    assert final["status"]["activeServiceStatus"]["rayClusterName"] == first
