"""mTLS with the real cert-manager (gate RayClusterMTLS), on each backend: cert-manager's CRDs and its
controller (tests/support/certmanager_process.py) are installed for this module only, before its operator starts,
and removed after it, so the other modules' operators find no cert-manager.

A RayCluster with `tlsOptions.enabled` gets upstream's Issuers and Certificates (controlled by it), reaches
`ready` once cert-manager has issued the Secrets its pods mount, with each pod's IP in its certificate;
deleting it takes the whole chain (Secrets included) away by garbage collection.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from kuberay.runtime import errors
from kuberay.runtime.resources import SECRET, Resource
from support.certmanager_process import CertManager
from support.eventually import eventually
from support.operator_process import OperatorProcess

from .conftest import RAYCLUSTER, Kube

ISSUER = Resource("cert-manager.io/v1", "Issuer", "issuers")
CERTIFICATE = Resource("cert-manager.io/v1", "Certificate", "certificates")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ray-cluster.mtls.yaml"


@pytest.fixture(scope="module")
def installed(cert_manager_installed: CertManager) -> CertManager:
    return cert_manager_installed


@pytest.fixture(scope="module")
def operator(installed: CertManager, operator: OperatorProcess) -> OperatorProcess:
    """The package's operator, started once cert-manager is installed (upstream looks for it at start-up)."""
    return operator


def example() -> dict[str, Any]:
    cluster: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return cluster


def san_ips(secret: dict[str, Any]) -> set[str]:
    certificate = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}


async def test_no_pod_before_the_certificates_are_issued(kube: Kube, installed: CertManager) -> None:
    installed.stop()  # the CRDs stay: the operator makes its Issuers and Certificates, nothing issues them
    try:
        name = (await kube.create_cluster(example()))["metadata"]["name"]

        async def held_twice() -> bool:
            # A repeated Event is one Event with a count: a second pass has run since the first held the pods.
            events = [e for e in await kube.events(name) if e["reason"] == "MTLSCertsNotReady"]
            return bool(events) and events[0].get("count", 1) >= 2

        await eventually(held_twice, 60)
        assert len((await kube.client.list(CERTIFICATE, kube.namespace)).items) == 3
        assert await kube.pods(name) == []
    finally:
        installed.start()

    async def ready() -> bool:
        return (await kube.cluster(name)).get("status", {}).get("state") == "ready"

    await eventually(ready, 180)


async def test_mtls_cluster_ready_with_cert_manager(
    kube: Kube, installed: CertManager, kube_backend: Any
) -> None:
    created = await kube.create_cluster(example())
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]

    async def ready() -> bool:
        return (await kube.cluster(name)).get("status", {}).get("state") == "ready"

    await eventually(ready, 180)
    assert installed.running()
    issuers = {i["metadata"]["name"]: i for i in (await kube.client.list(ISSUER, kube.namespace)).items}
    certificates = {
        c["metadata"]["name"]: c for c in (await kube.client.list(CERTIFICATE, kube.namespace)).items
    }
    assert set(issuers) == {f"ray-selfsigned-issuer-{name}", f"ray-ca-issuer-{name}"}
    assert set(certificates) == {
        f"ray-ca-certificate-{name}",
        f"ray-head-cert-{name}",
        f"ray-worker-cert-{name}",
    }
    for obj in [*issuers.values(), *certificates.values()]:
        assert [(o["kind"], o["uid"], o.get("controller")) for o in obj["metadata"]["ownerReferences"]] == [
            ("RayCluster", uid, True)
        ]
    assert certificates[f"ray-ca-certificate-{name}"]["spec"]["secretName"] == f"{name}-ca-secret-{uid[:8]}"
    assert certificates[f"ray-head-cert-{name}"]["spec"]["dnsNames"] == [
        "localhost",
        f"{name}-head-svc.{kube.namespace}.svc.cluster.local",
    ]

    # Every pod mounts its node type's Secret, whose certificate comes to name the pod's IP (the pods'
    # `wait-for-tls-ip-san` init container waits for that; the simulated node does not run it).
    pods = await kube.live_pods(name)
    assert len(pods) == 2
    for pod in pods:
        node_type = pod["metadata"]["labels"]["ray.io/node-type"]
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "ray-tls")
        assert volume["secret"]["secretName"] == f"ray-{node_type}-secret-{name}"
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["RAY_USE_TLS"] == "1"
        assert env["RAY_TLS_CA_CERT"] == "/etc/ray/tls/ca.crt"

        async def names_pod_ip(
            secret_name: str = volume["secret"]["secretName"], ip: str = pod["status"]["podIP"]
        ) -> bool:
            secret = await kube.client.get(SECRET, secret_name, kube.namespace)
            return {"tls.crt", "tls.key", "ca.crt"} <= set(secret["data"]) and ip in san_ips(secret)

        await eventually(names_pod_ip, 60)
        secret = await kube.client.get(SECRET, volume["secret"]["secretName"], kube.namespace)
        owner = certificates[f"ray-{node_type}-cert-{name}"]["metadata"]["uid"]
        assert owner in {o["uid"] for o in secret["metadata"]["ownerReferences"]}

    # `kubectl get certificates` prints cert-manager's READY column (a JSONPath filter) as any API server does.
    def table() -> list[list[str]]:
        argv = [
            "kubectl",
            f"--kubeconfig={kube_backend.kubeconfig}",
            "get",
            "certificates",
            "-n",
            kube.namespace,
        ]
        return [
            line.split()[:2]
            for line in subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()
        ]

    async def all_ready() -> bool:
        return sorted(await asyncio.to_thread(table)) == sorted(
            [["NAME", "READY"], *([n, "True"] for n in certificates)]
        )

    await eventually(all_ready, 60)

    # Deleting the cluster takes the Issuers, Certificates and their Secrets with it.
    await kube.client.delete(RAYCLUSTER, name, kube.namespace)

    async def gone() -> bool:
        left = [
            *(await kube.client.list(ISSUER, kube.namespace)).items,
            *(await kube.client.list(CERTIFICATE, kube.namespace)).items,
        ]
        for secret_name in (
            f"ray-head-secret-{name}",
            f"ray-worker-secret-{name}",
            f"{name}-ca-secret-{uid[:8]}",
        ):
            with contextlib.suppress(errors.NotFoundError):
                left.append(await kube.client.get(SECRET, secret_name, kube.namespace))
        return not left

    await eventually(gone, 120)
