"""mTLS on real Ray (process mode): `kuberay local up --node-mode process --feature-gates RayClusterMTLS=true`
and the real cert-manager installed as examples/ray-cluster.mtls.yaml tells a user, then that example
applied. Its head and worker start with the Secrets cert-manager issued and `RAY_USE_TLS=1`, and join one
cluster over TLS; the head's GCS port answers only a client that presents a certificate of the cluster's
CA: a plaintext client, a TLS client without a certificate and one whose certificate another CA signed are
refused.

One instance and one Ray cluster for the file (a private one: the run's shared process-mode instance has
neither the gate nor cert-manager).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from ray.core.generated import gcs_pb2, gcs_service_pb2

from support.certmanager_process import CertManager
from support.eventually import eventually
from support.local_instance import EXAMPLES, KUBECTL_POLL, LocalInstance

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

READY_TIMEOUT = 300.0  # Ray on a loaded two-core machine: a bound, not a measurement
EXAMPLE = EXAMPLES / "ray-cluster.mtls.yaml"
GCS_METHOD = "/ray.rpc.NodeInfoGcsService/GetAllNodeInfo"


@pytest.fixture(scope="module")
def tls_cluster(
    cert_manager: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalInstance, dict[str, Any]]]:
    """The example's RayCluster, ready, on a process-mode instance with cert-manager; and the instance."""
    directory = tmp_path_factory.mktemp("mtls")
    args = ("--node-mode", "process", "--port", "0", "--feature-gates", "RayClusterMTLS=true")
    with LocalInstance(directory / "local", *args) as local:
        manager = CertManager.install(cert_manager, local.kubeconfig, directory / "cert-manager.log")
        try:
            namespace = local.namespace("mtls")
            local.kubectl("apply", "-n", namespace, "-f", str(EXAMPLE))
            yield local, eventually(
                lambda: (c := local.get("raycluster", "mtls", namespace)).get("status", {}).get("state") == "ready"
                and c, READY_TIMEOUT, f"RayCluster {namespace}/mtls ready", every=KUBECTL_POLL,
            )  # fmt: skip
            local.kubectl("delete", "raycluster", "mtls", "-n", namespace, "--wait=false")
        finally:
            manager.uninstall()


def pem(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def another_ca_client(ip: str) -> tuple[bytes, bytes]:
    """A private key and a client certificate for `ip` (in `ssl_channel_credentials`' order), the certificate
    self-signed: its CA is not the cluster's."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "intruder")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem, certificate.public_bytes(serialization.Encoding.PEM)


def call_gcs(channel: grpc.Channel) -> tuple[grpc.StatusCode, gcs_service_pb2.GetAllNodeInfoReply | None]:
    """The status of one GCS call on `channel`, and its reply: the nodes the GCS knows."""
    call = channel.unary_unary(
        GCS_METHOD, response_deserializer=gcs_service_pb2.GetAllNodeInfoReply.FromString
    )
    with channel:
        try:
            return grpc.StatusCode.OK, call(b"", timeout=60)  # an empty request asks for every node
        except grpc.RpcError as e:
            return e.code(), None


def test_head_and_worker_join_over_mutual_tls(tls_cluster: tuple[LocalInstance, dict[str, Any]]) -> None:
    local, cluster = tls_cluster
    namespace, head = cluster["metadata"]["namespace"], cluster["status"]["head"]
    pods = json.loads(
        local.kubectl("get", "pods", "-n", namespace, "-l", "ray.io/cluster=mtls", "-o", "json")
    )
    ips = {pod["metadata"]["labels"]["ray.io/node-type"]: pod["status"]["podIP"] for pod in pods["items"]}
    assert set(ips) == {"head", "worker"}
    for pod in pods["items"]:
        env = local.kubectl("exec", "-n", namespace, pod["metadata"]["name"], "--", "env").splitlines()
        assert "RAY_USE_TLS=1" in env
        assert "RAY_TLS_SERVER_CERT=/etc/ray/tls/tls.crt" in env

    address = f"{head['podIP']}:6379"
    secret = local.get("secret", "ray-worker-secret-mtls", namespace)
    ca, certificate, key = pem(secret, "ca.crt"), pem(secret, "tls.crt"), pem(secret, "tls.key")
    # A client holding a certificate of the cluster's CA (the workers' own), which checks that the head's
    # certificate names the head's pod IP, is answered: the head and the worker both joined the GCS, whose
    # only port speaks mutual TLS.
    code, reply = call_gcs(grpc.secure_channel(address, grpc.ssl_channel_credentials(ca, key, certificate)))
    assert code == grpc.StatusCode.OK and reply is not None
    nodes = {
        (node.node_manager_address, node.is_head_node, gcs_pb2.GcsNodeInfo.GcsNodeState.Name(node.state))
        for node in reply.node_info_list
    }
    assert nodes == {(ips["head"], True, "ALIVE"), (ips["worker"], False, "ALIVE")}
    # A plaintext client, a TLS client without a certificate and one whose certificate another CA signed are
    # refused before they reach the service.
    refused = [
        grpc.insecure_channel(address),
        grpc.secure_channel(address, grpc.ssl_channel_credentials(ca)),
        grpc.secure_channel(address, grpc.ssl_channel_credentials(ca, *another_ca_client(head["podIP"]))),
    ]
    assert [call_gcs(channel) for channel in refused] == [(grpc.StatusCode.UNAVAILABLE, None)] * 3
