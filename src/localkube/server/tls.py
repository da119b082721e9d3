"""TLS material in the data directory: a self-signed CA and a serving certificate it signs.

Made once, on first start, and reused afterwards so kubeconfigs written earlier keep working. The serving
certificate names localhost, the loopback addresses, the host the server binds, the in-cluster names of
the `kubernetes` Service and the process node's bridge gateways (where its pods reach the server), so a
client may reach it by any of them; a certificate made before it named the gateways is made again. Keys
are EC P-256: quick to make and to handshake with.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from localkube.server.privatefiles import private_directory, write_private

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_VALIDITY = datetime.timedelta(days=3650)
_SERVICE_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
_SERVICE_ADDRESSES = ("127.0.0.1", "::1", "10.96.0.1")


@dataclass(frozen=True)
class TlsFiles:
    ca_cert: Path
    server_cert: Path
    server_key: Path


def ensure_tls(data_dir: Path, host: str, addresses: Iterable[str] = ()) -> TlsFiles:
    """The CA and serving certificate under `data_dir/pki`, made if missing, or if the certificate does not
    name every one of `addresses` (more addresses the server is reached at: the pod bridges' gateways)."""
    pki = data_dir / "pki"
    files = TlsFiles(pki / "ca.crt", pki / "server.crt", pki / "server.key")
    wanted = {ipaddress.ip_address(address) for address in addresses}
    if files.ca_cert.exists() and files.server_cert.exists() and files.server_key.exists():
        names = x509.load_pem_x509_certificate(
            files.server_cert.read_bytes()
        ).extensions.get_extension_for_class(x509.SubjectAlternativeName)
        if wanted <= set(names.value.get_values_for_type(x509.IPAddress)):
            return files
    private_directory(pki)
    ca_pem, cert_pem, key_pem = issue("localkube-ca", "localkube", _alternative_names(host, wanted))
    files.ca_cert.write_bytes(ca_pem)
    files.server_cert.write_bytes(cert_pem)
    write_private(files.server_key, key_pem)
    return files


def _alternative_names(host: str, extra: Iterable[IPAddress]) -> list[x509.GeneralName]:
    dns = set(_SERVICE_NAMES) | {socket.gethostname()}
    addresses = set(_SERVICE_ADDRESSES) | {str(address) for address in extra}
    try:
        ipaddress.ip_address(host)
        if host not in ("0.0.0.0", "::"):
            addresses.add(host)
    except ValueError:
        dns.add(host)
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in sorted(dns)]
    names += [x509.IPAddress(ipaddress.ip_address(address)) for address in sorted(addresses)]
    return names


def issue(ca_common_name: str, common_name: str, names: list[x509.GeneralName]) -> tuple[bytes, bytes, bytes]:
    """A new CA and a serving certificate it signed for `names`: (CA PEM, certificate PEM, key PEM)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_common_name)])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )  # fmt: skip
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    encoding = serialization.Encoding.PEM
    return ca_cert.public_bytes(encoding), server_cert.public_bytes(encoding), key_pem
