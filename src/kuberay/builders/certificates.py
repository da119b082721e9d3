"""The cert-manager objects of an mTLS RayCluster (`spec.tlsOptions.enabled`, gate RayClusterMTLS), as
upstream's mTLS controller makes them: a PKI of the cluster's own, every object controlled by the RayCluster.

    Issuer ray-selfsigned-issuer-<c>   (selfSigned)
      └ Certificate ray-ca-certificate-<c>  → Secret <c>-ca-secret-<uid[:8]>  (isCA, RSA 4096, ~10 years)
    Issuer ray-ca-issuer-<c>           (ca: that Secret)
      ├ Certificate ray-head-cert-<c>       → Secret ray-head-secret-<c>     (90 days, renewed 15 days before)
      └ Certificate ray-worker-cert-<c>     → Secret ray-worker-secret-<c>

The CA Secret's name carries the cluster's uid, so a cluster deleted and made again under its name gets a
new CA rather than a stale one. The leaf certificates name `localhost` (and, for the head, the head
Service's FQDN) and the IPs of the live pods of their node type plus 127.0.0.1: workers reach the head by
name, while the GCS reaches each worker by its pod IP. Lists are sorted and de-duplicated, so the same pods
always build the same spec.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import names, ownership, tls

API_VERSION: Final = "cert-manager.io/v1"
GROUP: Final = "cert-manager.io"
ISSUER_KIND: Final = "Issuer"
CERTIFICATE_KIND: Final = "Certificate"
# The Secret keys a pod needs; cert-manager writes all three for a CA-issued certificate.
SECRET_KEYS: Final = ("tls.crt", "tls.key", "ca.crt")
LOOPBACK: Final = "127.0.0.1"
# Go's metav1.Duration, as upstream's objects carry them.
CA_DURATION: Final = "87600h0m0s"  # 3650 days
CA_RENEW_BEFORE: Final = "720h0m0s"  # 30 days
LEAF_DURATION: Final = "2160h0m0s"  # 90 days
LEAF_RENEW_BEFORE: Final = "360h0m0s"  # 15 days
CA_USAGES: Final = ("cert sign", "crl sign")
LEAF_USAGES: Final = ("digital signature", "key encipherment", "server auth", "client auth")

JSON = dict[str, Any]


def self_signed_issuer_name(cluster_name: str) -> str:
    return f"{constants.RAY_SELF_SIGNED_ISSUER_PREFIX}-{cluster_name}"


def ca_issuer_name(cluster_name: str) -> str:
    return f"{constants.RAY_CA_ISSUER_PREFIX}-{cluster_name}"


def ca_certificate_name(cluster_name: str) -> str:
    return f"{constants.RAY_CA_CERTIFICATE_PREFIX}-{cluster_name}"


def ca_secret_name(cluster_name: str, uid: str) -> str:
    return f"{cluster_name}-{constants.RAY_CA_SECRET_PREFIX}-{uid[:8]}"


def certificate_name(cluster_name: str, node_type: str) -> str:
    """The leaf Certificate of the head (`ray-head-cert-<c>`) or of every worker (`ray-worker-cert-<c>`)."""
    return tls.per_node_type(
        cluster_name, node_type, constants.RAY_HEAD_CERT_PREFIX, constants.RAY_WORKER_CERT_PREFIX
    )


def labels(cluster_name: str, component: str) -> dict[str, str]:
    return {
        constants.KUBERNETES_APPLICATION_NAME_LABEL: constants.APPLICATION_NAME,
        constants.KUBERNETES_CREATED_BY_LABEL: constants.COMPONENT_NAME,
        "app.kubernetes.io/component": component,
        constants.RAY_CLUSTER_LABEL: cluster_name,
    }


def _object(cluster: RayCluster, kind: str, name: str, component: str, spec: JSON) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": cluster.namespace,
            "labels": labels(cluster.name, component),
            "ownerReferences": ownership.controlled_by(cluster),
        },
        "spec": spec,
    }


def _issuer_ref(name: str) -> JSON:
    return {"name": name, "kind": ISSUER_KIND, "group": GROUP}


def build_self_signed_issuer(cluster: RayCluster) -> JSON:
    """The Issuer that signs the cluster's CA certificate."""
    name = self_signed_issuer_name(cluster.name)
    return _object(cluster, ISSUER_KIND, name, "selfsigned-issuer", {"selfSigned": {}})


def build_ca_issuer(cluster: RayCluster) -> JSON:
    """The Issuer that signs the leaf certificates with the CA in the CA certificate's Secret."""
    ca = {"secretName": ca_secret_name(cluster.name, cluster.metadata.uid or "")}
    return _object(cluster, ISSUER_KIND, ca_issuer_name(cluster.name), "ca-issuer", {"ca": ca})


def build_ca_certificate(cluster: RayCluster) -> JSON:
    name = cluster.name
    spec = {
        "secretName": ca_secret_name(name, cluster.metadata.uid or ""),
        "isCA": True,
        "commonName": f"ray-ca-{name}",
        "privateKey": {"algorithm": "RSA", "size": 4096},
        "duration": CA_DURATION,
        "renewBefore": CA_RENEW_BEFORE,
        "usages": list(CA_USAGES),
        "issuerRef": _issuer_ref(self_signed_issuer_name(name)),
    }
    return _object(cluster, CERTIFICATE_KIND, ca_certificate_name(name), "ca-certificate", spec)


def build_leaf_certificate(
    cluster: RayCluster, node_type: str, pod_ips: Iterable[str], cluster_domain: str
) -> JSON:
    """The head's or the workers' Certificate for the pods of that type whose IPs are `pod_ips`."""
    name = cluster.name
    dns_names = {"localhost"}
    if node_type == constants.HEAD_NODE:
        dns_names.add(names.head_fqdn(name, cluster.namespace, cluster.spec.dump(), cluster_domain))
    spec = {
        "secretName": tls.secret_name(name, node_type),
        "duration": LEAF_DURATION,
        "renewBefore": LEAF_RENEW_BEFORE,
        "dnsNames": sorted(dns_names),
        "ipAddresses": sorted({ip for ip in pod_ips if ip} | {LOOPBACK}),
        "usages": list(LEAF_USAGES),
        "issuerRef": _issuer_ref(ca_issuer_name(name)),
    }
    return _object(
        cluster, CERTIFICATE_KIND, certificate_name(name, node_type), f"{node_type}-certificate", spec
    )


def is_ready(certificate: Mapping[str, Any]) -> bool:
    """cert-manager's Ready condition is True for the certificate's current generation: a Ready left from
    before a SAN change does not count, as the Secret still holds the old certificate."""
    for condition in (certificate.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(
                condition.get("status") == "True"
                and condition.get("observedGeneration") == certificate["metadata"].get("generation")
            )
    return False
