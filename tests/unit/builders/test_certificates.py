from pathlib import Path
from typing import Any

import pytest

from kuberay.api.raycluster import RayCluster
from kuberay.builders import certificates
from support import golden

TESTDATA = Path(__file__).parent / "testdata" / "certificates"
UID = "6f1c2d3e-aaaa-bbbb-cccc-0123456789ab"


def build_all(data: dict[str, Any]) -> list[dict[str, Any]]:
    cluster = RayCluster.parse(data["cluster"])
    return [
        certificates.build_self_signed_issuer(cluster),
        certificates.build_ca_issuer(cluster),
        certificates.build_ca_certificate(cluster),
        certificates.build_leaf_certificate(cluster, "head", data["head_ips"], data["cluster_domain"]),
        certificates.build_leaf_certificate(cluster, "worker", data["worker_ips"], data["cluster_domain"]),
    ]


@pytest.mark.parametrize("case", golden.cases(TESTDATA), ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), build_all(golden.load(case)))


def test_names_and_sans_follow_upstream() -> None:
    issuers_and_certs = build_all(golden.load(TESTDATA / "mtls.input.yaml"))
    by_name = {o["metadata"]["name"]: o for o in issuers_and_certs}
    assert list(by_name) == [
        "ray-selfsigned-issuer-raycluster-mtls",
        "ray-ca-issuer-raycluster-mtls",
        "ray-ca-certificate-raycluster-mtls",
        "ray-head-cert-raycluster-mtls",
        "ray-worker-cert-raycluster-mtls",
    ]
    ca_secret = "raycluster-mtls-ca-secret-6f1c2d3e"  # the uid's first 8 characters
    assert by_name["ray-ca-issuer-raycluster-mtls"]["spec"] == {"ca": {"secretName": ca_secret}}
    head = by_name["ray-head-cert-raycluster-mtls"]["spec"]
    assert head["secretName"] == "ray-head-secret-raycluster-mtls"
    assert head["dnsNames"] == ["localhost", "my-head.team-a.svc.cluster.local"]
    assert head["ipAddresses"] == ["10.0.0.7", "127.0.0.1"]
    worker = by_name["ray-worker-cert-raycluster-mtls"]["spec"]
    assert worker["dnsNames"] == ["localhost"]
    # Sorted as strings, as Go's sets.List sorts them.
    assert worker["ipAddresses"] == ["10.0.0.10", "10.0.0.9", "127.0.0.1"]
    for obj in issuers_and_certs:
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("RayCluster", UID, True)


def certificate(generation: int, conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"generation": generation}, "status": {"conditions": conditions}}


@pytest.mark.parametrize(
    ("cert", "ready"),
    [
        (certificate(2, [{"type": "Ready", "status": "True", "observedGeneration": 2}]), True),
        # Ready for the SANs before the last change: the Secret still holds the old certificate.
        (certificate(3, [{"type": "Ready", "status": "True", "observedGeneration": 2}]), False),
        (certificate(2, [{"type": "Ready", "status": "False", "observedGeneration": 2}]), False),
        (certificate(1, [{"type": "Issuing", "status": "True", "observedGeneration": 1}]), False),
        ({"metadata": {"generation": 1}}, False),
    ],
)
def test_ready_only_at_the_current_generation(cert: dict[str, Any], ready: bool) -> None:
    assert certificates.is_ready(cert) is ready
