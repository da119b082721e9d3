"""An issued certificate wakes its RayCluster (gate RayClusterMTLS, real cert-manager, each backend): the
operator's controllers run in this process on a clock that never moves, so no requeue, no backoff retry
and no periodic resync ever comes round, and a pass starts only when a watched object changes. A cluster
held while cert-manager issues nothing gets its pods once cert-manager issues: its Certificates and the
Secrets cert-manager writes for them are watched (upstream's mTLS controller owns Issuers and
Certificates), not polled.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from kuberay.api.features import Feature, FeatureGates
from kuberay.controllers.raycluster import mtls
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import POD
from support.certmanager_process import CertManager
from support.eventually import eventually

from ..inprocess import running_operator

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ray-cluster.mtls.yaml"
MTLS = FeatureGates({Feature.RAY_CLUSTER_MTLS: True})


def nothing_more(manager: Manager, settings: Any) -> None:
    """The RayCluster controller alone (`running_operator` installs it and one controller more)."""


async def test_an_issued_certificate_wakes_its_cluster(
    kube_backend: Any, cert_manager_installed: CertManager
) -> None:
    cert_manager = cert_manager_installed
    cert_manager.stop()  # its CRDs stay: the operator makes its Issuers and Certificates, nothing issues them
    try:
        # The clock starts at the real time, so the certificates' validity looks as it is.
        clock = FakeClock(start=datetime.now(UTC))
        still = clock.monotonic()
        async with running_operator(kube_backend, nothing_more, gates=MTLS, clock=clock) as run:
            client, namespace = run.client, run.namespaces[0]
            cluster = yaml.safe_load(EXAMPLE.read_text())
            cluster["metadata"]["namespace"] = namespace
            await client.create(RAYCLUSTER, cluster)

            async def pki_made() -> bool:
                listed = await client.list(mtls.CERTIFICATE, namespace)
                return len(listed.items) == 3 and len((await client.list(mtls.ISSUER, namespace)).items) == 2

            await eventually(pki_made, 60)
            assert (await client.list(POD, namespace)).items == []
            cert_manager.start()

            async def pods_made() -> bool:
                return len((await client.list(POD, namespace)).items) == 2

            # Only a pass makes pods, and with the clock standing still only a watch event starts one.
            await eventually(pods_made, 120)
            assert clock.monotonic() == still
    finally:
        if not cert_manager.running():
            cert_manager.start()
