"""The mTLS step of a RayCluster reconcile (gate RayClusterMTLS, `spec.tlsOptions.enabled`): upstream's
RayClusterMTLS controller, run as a step before the pods so that a pod's IP reaches its certificate on the
pass that sees the pod get one.

Order: the self-signed Issuer, the CA Certificate, the CA Issuer, the head Certificate, the worker
Certificate (`kuberay.builders.certificates` builds them). Issuers and the CA Certificate are made once and
never updated (cert-manager normalises specs, and a rewrite would reissue the CA); a leaf Certificate is
updated when its labels or its DNS names or IPs (as sets) differ from what the live pods need. Each
Certificate's Secret, once cert-manager has written it, gets an owner reference to its Certificate, so
deleting the RayCluster removes Issuers, Certificates and Secrets by garbage collection, with no finalizer.
A failure is a Warning Event `MTLSFailedToReconcile` naming the object, and ends the pass.

Pods are held (`hold_reason`) until both leaf Certificates are Ready at their current generation and both
Secrets hold `tls.crt`, `tls.key` and `ca.crt`, as upstream's RayCluster controller holds them.

Everything is read from the informers' caches (Issuers, Certificates, Secrets, Pods), as upstream's cached
client reads them; the writes go through the client. The controller watches Issuers and Certificates (by
their controller reference to the RayCluster) and the Secrets cert-manager issues (`issued_secret_owner`),
so a certificate that becomes Ready, or its Secret written, wakes its cluster at once. The next pass is
also due by upstream's requeue decision (`requeue_seconds`): 30 s while the leaf certificates are not
Ready, every 60 s once they are, so an expiry is warned of without an event.

Whether cert-manager is installed (`cert-manager.io/v1` served) is what the Certificate informer found (an
optional informer: a 404 means not served, and it lists again every `informer.NOT_SERVED_PROBE` seconds),
so cert-manager installed after the operator is used without a restart (upstream asks discovery once, at
start-up); a cluster refused for want of it is looked at again as often.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature
from kuberay.api.raycluster import RayCluster
from kuberay.builders import certificates, tls
from kuberay.controllers.raycluster.context import Context
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors
from kuberay.runtime.cache import CachedObject, Store
from kuberay.runtime.controller import Mapper, controller_owner
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import SECRET, ObjectKey, Resource
from kubesemantics import times

log = logging.getLogger(__name__)

ISSUER = Resource(certificates.API_VERSION, certificates.ISSUER_KIND, "issuers")
CERTIFICATE = Resource(certificates.API_VERSION, certificates.CERTIFICATE_KIND, "certificates")
RECONCILE, UPDATE = "Reconcile", "Update"
EXPIRY_WARNING = timedelta(hours=24)
# Upstream's mtlsDefaultRequeueDuration and mtlsPeriodicCheckDuration (raycluster_mtls_controller.go).
NOT_READY_REQUEUE_SECONDS = 30.0
READY_REQUEUE_SECONDS = 60.0
# What cert-manager writes on every Secret it issues: the name of the Certificate the Secret is for.
CERTIFICATE_NAME_ANNOTATION = "cert-manager.io/certificate-name"
NODE_TYPES = (constants.HEAD_NODE, constants.WORKER_NODE)

Obj = Mapping[str, Any]


def enabled(ctx: Context, cluster: RayCluster) -> bool:
    # The gate first: with it off (its default), no reconcile pays for a dump of the spec.
    gates = ctx.options.gates
    return gates.enabled(Feature.RAY_CLUSTER_MTLS) and tls.is_enabled(cluster.spec.dump(), gates)


def requeue_seconds(certificates_ready: bool) -> float:
    """When an mTLS cluster's next pass is due, as upstream's mTLS controller decides it."""
    return READY_REQUEUE_SECONDS if certificates_ready else NOT_READY_REQUEUE_SECONDS


def issued_secret_owner(certificates: Store) -> Mapper:
    """Maps a Secret cert-manager issued to the RayCluster controlling its Certificate (found in
    `certificates`): a Secret's first issuance comes before `_own_secret` makes the Certificate its owner,
    and the Secret may reach the cache after its Certificate turns Ready, when the pods still wait for it."""
    cluster_of = controller_owner(RAYCLUSTER)

    def owners(secret: CachedObject) -> tuple[ObjectKey, ...]:
        metadata = secret["metadata"]
        name = (metadata.get("annotations") or {}).get(CERTIFICATE_NAME_ANNOTATION)
        certificate = certificates.get(ObjectKey(metadata.get("namespace") or "", name)) if name else None
        return tuple(cluster_of(certificate)) if certificate is not None else ()

    return owners


def cert_manager_installed(ctx: Context) -> bool:
    """`cert-manager.io/v1` is served, as the Certificate informer last found (it looks again while it is
    not); each change logged once."""
    served = ctx.cert_manager_served()
    if served is None or served == ctx.cert_manager:
        return bool(ctx.cert_manager)
    ctx.cert_manager = served
    if served:
        log.info("cert-manager API found; RayClusters with tlsOptions get their certificates from it")
    else:
        log.info("cert-manager API not found; RayClusters with tlsOptions are refused until it is installed")
    return served


def _cached(store: Store, name: str, namespace: str) -> CachedObject | None:
    return store.get(ObjectKey(namespace, name))


def _pod_ips(ctx: Context, cluster: RayCluster, node_type: str) -> list[str]:
    """The IPs of the cluster's live pods of `node_type` (not deleting, not finished)."""
    pods = ctx.pods.list(
        cluster.namespace,
        {constants.RAY_CLUSTER_LABEL: cluster.name, constants.RAY_NODE_TYPE_LABEL: node_type},
    )
    return [
        str(pod["status"]["podIP"])
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and (pod.get("status") or {}).get("podIP")
    ]


async def _create_if_missing(
    ctx: Context, store: Store, resource: Resource, desired: Obj
) -> CachedObject | None:
    """The cached object, or None after creating `desired` (AlreadyExists: the cache had not seen it yet;
    the watch brings it, and the next pass)."""
    metadata = desired["metadata"]
    live = _cached(store, metadata["name"], metadata["namespace"])
    if live is None:
        with contextlib.suppress(errors.AlreadyExistsError):
            await ctx.client.create(resource, desired)
    return live


async def _own_secret(ctx: Context, certificate: Obj) -> None:
    """Adds the Certificate as an owner of its Secret (once cert-manager has written it)."""
    metadata = certificate["metadata"]
    cached = _cached(ctx.secrets, certificate["spec"]["secretName"], metadata["namespace"])
    if cached is None:
        return
    if any(owner.get("uid") == metadata["uid"] for owner in cached["metadata"].get("ownerReferences") or ()):
        return
    secret = thaw(cached)
    secret["metadata"].setdefault("ownerReferences", []).append(
        {
            "apiVersion": certificates.API_VERSION,
            "kind": certificates.CERTIFICATE_KIND,
            "name": metadata["name"],
            "uid": metadata["uid"],
        }
    )
    await ctx.client.update(SECRET, secret)


def _sans_differ(live: Obj, desired: Obj) -> bool:
    return any(set(live.get(key) or ()) != set(desired.get(key) or ()) for key in ("dnsNames", "ipAddresses"))


async def _leaf(ctx: Context, cluster: RayCluster, node_type: str) -> None:
    desired = certificates.build_leaf_certificate(
        cluster, node_type, _pod_ips(ctx, cluster, node_type), ctx.options.pods.cluster_domain
    )
    live = await _create_if_missing(ctx, ctx.certificates, CERTIFICATE, desired)
    if live is None:
        return
    if live["metadata"].get("labels") != desired["metadata"]["labels"] or _sans_differ(
        live["spec"], desired["spec"]
    ):
        updated = thaw(live)
        updated["metadata"]["labels"] = desired["metadata"]["labels"]
        updated["metadata"]["ownerReferences"] = desired["metadata"]["ownerReferences"]
        updated["spec"] = desired["spec"]
        ips = desired["spec"]["ipAddresses"]
        ctx.event(
            cluster, NORMAL, "MTLSCertificatesUpdated",
            f"Updated {node_type} certificate SANs (IPs: [{' '.join(ips)}])", UPDATE,
        )  # fmt: skip
        live = await ctx.client.update(CERTIFICATE, updated)
    await _own_secret(ctx, live)


async def _self_signed_issuer(ctx: Context, cluster: RayCluster) -> None:
    await _create_if_missing(ctx, ctx.issuers, ISSUER, certificates.build_self_signed_issuer(cluster))


async def _ca_certificate(ctx: Context, cluster: RayCluster) -> None:
    live = await _create_if_missing(
        ctx, ctx.certificates, CERTIFICATE, certificates.build_ca_certificate(cluster)
    )
    if live is not None:
        await _own_secret(ctx, live)


async def _ca_issuer(ctx: Context, cluster: RayCluster) -> None:
    await _create_if_missing(ctx, ctx.issuers, ISSUER, certificates.build_ca_issuer(cluster))


async def _head_certificate(ctx: Context, cluster: RayCluster) -> None:
    await _leaf(ctx, cluster, constants.HEAD_NODE)


async def _worker_certificate(ctx: Context, cluster: RayCluster) -> None:
    await _leaf(ctx, cluster, constants.WORKER_NODE)


STEPS = (
    ("self-signed issuer", _self_signed_issuer),
    ("CA certificate", _ca_certificate),
    ("CA issuer", _ca_issuer),
    ("head certificate", _head_certificate),
    ("worker certificate", _worker_certificate),
)


async def reconcile_certificates(ctx: Context, cluster: RayCluster) -> float | None:
    """The step: the PKI made or brought up to date, then its readiness told in an Event. Returns when
    the next pass is due (`requeue_seconds`), or None for a cluster without mTLS."""
    if not enabled(ctx, cluster):
        return None
    for what, make in STEPS:
        try:
            await make(ctx, cluster)
        except errors.KubeError as e:
            ctx.event(
                cluster, WARNING, "MTLSFailedToReconcile", f"Failed to reconcile mTLS {what}: {e}", RECONCILE
            )
            raise
    leaves = [
        _cached(ctx.certificates, certificates.certificate_name(cluster.name, node_type), cluster.namespace)
        for node_type in NODE_TYPES
    ]
    if not all(leaf is not None and certificates.is_ready(leaf) for leaf in leaves):
        ctx.event(
            cluster,
            NORMAL,
            "MTLSCertsNotReady",
            "Waiting for cert-manager to issue mTLS certificates",
            RECONCILE,
        )
        return requeue_seconds(False)
    ctx.event(
        cluster,
        NORMAL,
        "MTLSPKIReady",
        "mTLS PKI is ready: CA, head, and worker certificates issued",
        RECONCILE,
    )
    ca = _cached(ctx.certificates, certificates.ca_certificate_name(cluster.name), cluster.namespace)
    _warn_expiring(ctx, cluster, [*leaves, ca], ctx.clock.now())
    return requeue_seconds(True)


def _warn_expiring(
    ctx: Context, cluster: RayCluster, found: list[CachedObject | None], now: datetime
) -> None:
    """Ray reads its certificate files once, at start: a renewed certificate needs a pod restart."""
    for certificate in found:
        not_after = ((certificate or {}).get("status") or {}).get("notAfter")
        if certificate is None or not not_after:
            continue
        remaining = times.parse_time(not_after) - now
        if remaining < EXPIRY_WARNING:
            ctx.event(
                cluster, WARNING, "MTLSCertificateExpiringSoon",
                f"TLS certificate {certificate['metadata']['name']} expires in {remaining.total_seconds() / 3600:.1f} "
                "hours; Ray does not hot-reload certs so a pod restart will be needed after renewal",
                RECONCILE,
            )  # fmt: skip


def hold_reason(ctx: Context, cluster: RayCluster) -> str | None:
    """Why pods of this mTLS cluster may not be made yet (upstream's checkMTLSSecretsReady), or None."""
    for node_type in NODE_TYPES:
        name = certificates.certificate_name(cluster.name, node_type)
        certificate = _cached(ctx.certificates, name, cluster.namespace)
        if certificate is None:
            return f"certificate {name} not found"
        if not certificates.is_ready(certificate):
            generation = certificate["metadata"].get("generation", 0)
            return f"certificate {name} is not ready at current generation {generation}"
    for node_type in NODE_TYPES:
        name = tls.secret_name(cluster.name, node_type)
        secret = _cached(ctx.secrets, name, cluster.namespace)
        if secret is None:
            return f"secret {name} not found"
        for key in certificates.SECRET_KEYS:
            if key not in (secret.get("data") or {}):
                return f"secret {name} missing required key {key}"
    return None
