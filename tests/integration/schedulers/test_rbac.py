"""The `kuberay-operator` process with `--batch-scheduler volcano`, running as deploy/rbac's ServiceAccount
with localkube's RBAC enforced, makes and resizes Volcano PodGroups for a RayCluster and a RayJob (through
its cleanup) without a single 403: the ClusterRole grants what the plugin needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from integration.raycluster.conftest import service_account_kubeconfig
from integration.runtime.kube import client_for, new_namespace
from kuberay.rayresources import RAYCLUSTER, RAYJOB
from kuberay.runtime import errors
from kuberay.schedulers import volcano
from support.eventually import eventually
from support.operator_process import OperatorProcess

from .test_batch_schedulers import raycluster, rayjob


async def test_volcano_as_the_operators_service_account(gang_localkube: Any, tmp_path: Path) -> None:
    client = client_for(gang_localkube)
    namespace = await new_namespace(client)
    kubeconfig = service_account_kubeconfig(gang_localkube, f"{namespace}-sa", tmp_path / "kubeconfig")
    log = tmp_path / "operator.log"
    flags = ("--batch-scheduler=volcano", f"--watch-namespace={namespace}", "--enable-leader-election=false")
    operator = OperatorProcess(kubeconfig, log, *flags).start()

    async def group(name: str) -> dict[str, Any] | None:
        try:
            return await client.get(volcano.PODGROUP, name, namespace)
        except errors.NotFoundError:
            return None

    try:
        await client.create(RAYCLUSTER, raycluster(namespace, "rc", {"volcano.sh/queue-name": "q"}))
        assert (await eventually(lambda: group("ray-rc-pg")))["spec"]["minMember"] == 3
        # The deadline is checked before the Initializing pass makes the PodGroup: it is shortened only once the
        # group exists, so the job fails with a group to give back however slow that pass is.
        await client.create(RAYJOB, rayjob(namespace, "job", {}, "HTTPMode", activeDeadlineSeconds=3600,
                                           shutdownAfterJobFinishes=True))  # fmt: skip
        await eventually(lambda: group("ray-job-pg"))
        await client.patch(RAYJOB, "job", {"spec": {"activeDeadlineSeconds": 1}}, namespace)

        async def given_back() -> bool:
            found = await group("ray-job-pg")
            return found is not None and found["spec"]["minMember"] == 0

        await eventually(given_back, 90)
    finally:
        operator.stop()
        await client.close()
    assert "forbidden" not in log.read_text().lower()
