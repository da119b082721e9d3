"""The RayCluster reconcile of an mTLS cluster reads cert-manager's Issuers and Certificates, the Secrets
and every other watched kind from the caches, never with a live GET (upstream reads them through its
cached client), and its next pass is due by upstream's mTLS requeue decision (raycluster_mtls_controller.go:
`mtlsDefaultRequeueDuration` while the certificates are not Ready, `mtlsPeriodicCheckDuration` once they
are). An issued Secret maps to the RayCluster whose Certificate it is for, so its arrival wakes the cluster.
"""

from __future__ import annotations

import base64
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.builders import certificates, tls
from kuberay.controllers.raycluster import mtls
from kuberay.controllers.raycluster.context import ClusterOptions, Context
from kuberay.controllers.raycluster.reconciler import RayClusterReconciler
from kuberay.runtime.cache import prepare
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.controller import Result
from kuberay.runtime.expectations import ScaleExpectations
from kuberay.runtime.resources import (
    JOB,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    SECRET,
    SERVICE,
    ObjectKey,
    Resource,
)

from ..fakekube import RAYCLUSTER, Events, FakeClient

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "ray-cluster.mtls.yaml"
KEY = ObjectKey("ns", "mtls")
# Every cache the controller reads (its Context's fields), filled by the fake on each write.
CACHES = {"clusters": RAYCLUSTER, "pods": POD, "services": SERVICE, "jobs": JOB, "secrets": SECRET,
          "pvcs": PERSISTENT_VOLUME_CLAIM, "certificates": mtls.CERTIFICATE, "issuers": mtls.ISSUER}  # fmt: skip


class CountingClient(FakeClient):
    """The fake API server, counting the live GETs by kind."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.gets: Counter[str] = Counter()

    async def get(self, resource: Resource, name: str, namespace: str | None = None, **kw: Any) -> Any:
        self.gets[resource.plural] += 1
        return await super().get(resource, name, namespace, **kw)


def world() -> tuple[CountingClient, RayClusterReconciler]:
    kube = CountingClient(FakeClock(datetime(2026, 1, 1, tzinfo=UTC)))
    stores = {field: kube.store(resource) for field, resource in CACHES.items()}
    ctx = Context(
        client=kube,  # type: ignore[arg-type]
        recorder=Events(),  # type: ignore[arg-type]
        expectations=ScaleExpectations(stores["pods"].get, kube.clock, connected_since=lambda: 0.0),
        clock=kube.clock,
        options=ClusterOptions(gates=FeatureGates({Feature.RAY_CLUSTER_MTLS: True})),
        cert_manager_served=lambda: True,
        **stores,  # type: ignore[arg-type]
    )
    manifest = yaml.safe_load(EXAMPLE.read_text())
    manifest["metadata"]["namespace"] = "ns"
    kube.put(RAYCLUSTER, manifest)
    return kube, RayClusterReconciler(ctx)


def issue(kube: FakeClient) -> None:
    """What cert-manager does: every Certificate Ready at its generation, its Secret written and annotated."""
    for certificate in kube.objects(mtls.CERTIFICATE).values():
        generation = certificate["metadata"]["generation"]
        ready = {"type": "Ready", "status": "True", "observedGeneration": generation}
        kube.put(mtls.CERTIFICATE, {**certificate, "status": {"conditions": [ready]}})
        data = {key: base64.b64encode(b"pem").decode() for key in certificates.SECRET_KEYS}
        metadata = {
            "name": certificate["spec"]["secretName"],
            "namespace": "ns",
            "annotations": {mtls.CERTIFICATE_NAME_ANNOTATION: certificate["metadata"]["name"]},
        }
        kube.put(SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data})


async def settle(reconciler: RayClusterReconciler) -> Result:
    """Passes until one writes nothing new (a status write asks for a short requeue)."""
    for _ in range(10):
        result = await reconciler.reconcile(KEY)
        if result.requeue_after != 2.0:
            return result
    raise AssertionError("the cluster never settled")


async def test_a_reconcile_reads_no_cached_kind_with_a_live_get() -> None:
    kube, reconciler = world()
    held = await settle(reconciler)
    assert len(kube.objects(mtls.CERTIFICATE)) == 3 and len(kube.objects(mtls.ISSUER)) == 2
    assert kube.objects(POD) == {}
    issue(kube)
    ready = await settle(reconciler)
    assert len(kube.objects(POD)) == 2
    assert {name: n for name, n in kube.gets.items() if name in {r.plural for r in CACHES.values()}} == {}
    # Held pods are waited for (30 s, the watches bring the issuance sooner); a ready PKI is checked every minute.
    assert (held.requeue_after, ready.requeue_after) == (30.0, 60.0)


def test_an_issued_secret_wakes_the_cluster_of_its_certificate() -> None:
    kube, _ = world()
    cluster = RayCluster.parse(kube.objects(RAYCLUSTER)["mtls"])
    stored = kube.put(
        mtls.CERTIFICATE, certificates.build_leaf_certificate(cluster, "head", [], "cluster.local")
    )
    owners = mtls.issued_secret_owner(kube.store(mtls.CERTIFICATE))
    secret = {
        "metadata": {
            "name": tls.secret_name("mtls", "head"),
            "namespace": "ns",
            "annotations": {mtls.CERTIFICATE_NAME_ANNOTATION: stored["metadata"]["name"]},
        }
    }
    assert owners(prepare(secret)) == (KEY,)
    assert owners(prepare({"metadata": {"name": "other", "namespace": "ns"}})) == ()
