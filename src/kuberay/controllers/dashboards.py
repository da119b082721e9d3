"""How the operator reaches a Ray cluster's dashboard (shared by the RayJob and RayService controllers):
directly by the head Service's DNS name with a 2 s timeout, or, with `--use-kubernetes-proxy`, through the
API server's service proxy with its address and credentials and a 10 s timeout; and the cluster's Ray auth
token when its `authOptions.mode` is token (upstream reads it for every client it makes).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from kuberay.api import constants
from kuberay.builders import auth, names
from kuberay.rayclient.dashboard import DIRECT_TIMEOUT, PROXY_TIMEOUT, DashboardError, proxy_base_url
from kuberay.runtime import errors
from kuberay.runtime.client import Client, api_server_http, load_config
from kuberay.runtime.resources import SECRET


def head_service_name(cluster: Mapping[str, Any]) -> str:
    """The head Service a cluster's status names, else the one its spec implies."""
    status_head = ((cluster.get("status") or {}).get("head")) or {}
    return status_head.get("serviceName") or names.head_service_name(
        cluster["metadata"]["name"], cluster.get("spec") or {}
    )


def dashboard_address(head_service: Mapping[str, Any] | None, cluster_domain: str) -> str | None:
    """upstream `FetchHeadServiceURL`: `<svc>.<ns>.svc.<domain>:<port>` of the head Service's `dashboard`
    port, without a scheme (as `status.dashboardURL` holds it); None without the Service or the port."""
    if head_service is None:
        return None
    metadata = head_service.get("metadata") or {}
    for port in (head_service.get("spec") or {}).get("ports") or ():
        if port.get("name") == constants.DASHBOARD_PORT_NAME:
            return (
                f"{metadata.get('name')}.{metadata.get('namespace')}.svc.{cluster_domain}:{port.get('port')}"
            )
    return None


@dataclass(frozen=True)
class DashboardAccess:
    """How the operator reaches a dashboard: directly by the head Service's DNS name, or through the API
    server's service proxy (`--use-kubernetes-proxy`, `api_server` set)."""

    http: httpx.AsyncClient
    api_server: str | None = None

    def base_url(self, namespace: str, dashboard_url: str, cluster: Mapping[str, Any] | None) -> str:
        if self.api_server is not None and cluster is not None:
            return proxy_base_url(self.api_server, namespace, head_service_name(cluster))
        return dashboard_url if dashboard_url.startswith("http://") else "http://" + dashboard_url


def dashboard_access(use_kubernetes_proxy: bool, kubeconfig: str | None) -> DashboardAccess:
    """Direct access with a 2 s timeout, or, with `--use-kubernetes-proxy`, the API server's service proxy with
    its address and credentials and a 10 s timeout."""
    if not use_kubernetes_proxy:
        return DashboardAccess(httpx.AsyncClient(timeout=DIRECT_TIMEOUT))
    kube = load_config(kubeconfig)
    http = api_server_http(kube, PROXY_TIMEOUT)
    return DashboardAccess(http, api_server=kube.cluster.server)


async def auth_token(client: Client, cluster: Mapping[str, Any] | None) -> str | None:
    """The cluster's Ray auth token when its `authOptions.mode` is token; DashboardError when the Secret or
    its key is missing."""
    if cluster is None:
        return None
    options = (cluster.get("spec") or {}).get("authOptions")
    if not options or options.get("mode") != auth.AUTH_MODE_TOKEN:
        return None
    namespace = cluster["metadata"].get("namespace") or ""
    name = auth.secret_name(cluster["metadata"]["name"], options)
    try:
        secret = await client.get(SECRET, name, namespace)
    except errors.KubeError as e:
        raise DashboardError(f"failed to get the auth token Secret {namespace}/{name}: {e}") from e
    encoded = (secret.get("data") or {}).get(constants.RAY_AUTH_TOKEN_SECRET_KEY)
    if not encoded:
        raise DashboardError(f"Secret {namespace}/{name} has no {constants.RAY_AUTH_TOKEN_SECRET_KEY} key")
    return base64.b64decode(encoded).decode()
