"""The health check of a Ray Serve HTTP proxy (upstream `httpproxy_httpclient.go`): `GET /-/healthz` on the
proxy's serve port of one pod, directly at the pod's address or through the API server's pod proxy
(`--use-kubernetes-proxy`). Healthy means HTTP 200 and nothing else; no Ray auth header is sent.
"""

from __future__ import annotations

import httpx

from kuberay.rayclient.dashboard import DashboardError, DashboardTimeout

HEALTH_PATH = "/-/healthz"
# Upstream reads at most this much of an unhealthy answer into its error.
MAX_ERROR_BODY = 4096


def direct_health_url(pod_ip: str, port: int) -> str:
    return f"http://{pod_ip}:{port}{HEALTH_PATH}"


def proxied_health_url(api_server: str, namespace: str, pod: str, port: int) -> str:
    return f"{api_server.rstrip('/')}/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy{HEALTH_PATH}"


async def check_proxy_health(http: httpx.AsyncClient, url: str) -> None:
    """Returns when the proxy answers 200; raises DashboardError (DashboardTimeout past the client's
    deadline) otherwise."""
    try:
        response = await http.get(url)
    except httpx.TimeoutException as err:
        raise DashboardTimeout(f"GET {url}: timed out ({type(err).__name__})") from err
    except httpx.HTTPError as err:
        raise DashboardError(f"GET {url}: {err!r}") from err
    if response.status_code != 200:
        body = response.content[:MAX_ERROR_BODY].decode(errors="replace")
        raise DashboardError(
            f"CheckProxyActorHealth fails. status code: {response.status_code}, status: "
            f"{response.status_code} {response.reason_phrase}, body: {body}"
        )
