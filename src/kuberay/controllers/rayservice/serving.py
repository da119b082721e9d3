"""Serve applications on one of a RayService's clusters (upstream `reconcileServe`,
`updateServeDeployment`, `getAndCheckServeStatus`) and the config cache that decides when to submit.

A pass reads the applications first (readiness comes from that read, before any submission), then submits
`serveConfigV2` with a declarative `PUT` when this operator has not submitted that exact string to that
cluster, or the cluster reports no application at all (its head restarted without GCS fault tolerance).
The calls are bounded by the dashboard client's short timeout.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kuberay.api import constants
from kuberay.api.rayservice import ApplicationStatus
from kuberay.rayclient.dashboard import DashboardClient, DashboardError, ServeDetails

JSON = dict[str, Any]
CACHE_SIZE = 1000
TROUBLESHOOTING = (
    "Please see the troubleshooting guide https://docs.ray.io/en/latest/cluster/kubernetes/"
    "troubleshooting/rayservice-troubleshooting.html"
)


class ServeUpdateError(DashboardError):
    """Submitting `serveConfigV2` failed (upstream's longer message): the failure the controller reports
    with a `FailedToUpdateServeApplications` Event."""


class ServeConfigCache:
    """The last `serveConfigV2` submitted per (RayService, cluster); the least recently used RayServices
    are forgotten past `size` (an operator restart forgets everything, so configs are re-submitted once)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._by_service: OrderedDict[str, dict[str, str]] = OrderedDict()

    def get(self, service: str, cluster: str) -> str | None:
        clusters = self._by_service.get(service)
        if clusters is None:
            return None
        self._by_service.move_to_end(service)
        return clusters.get(cluster)

    def put(self, service: str, cluster: str, config: str) -> None:
        self._by_service.setdefault(service, {})[cluster] = config
        self._by_service.move_to_end(service)
        while len(self._by_service) > self._size:
            self._by_service.popitem(last=False)

    def keep_only(self, service: str, clusters: set[str]) -> None:
        """Forgets the clusters of `service` that are neither active nor pending."""
        cached = self._by_service.get(service)
        if cached is not None:
            for name in [name for name in cached if name not in clusters]:
                del cached[name]


@dataclass(frozen=True)
class ServeOutcome:
    ready: bool
    applications: dict[str, JSON] = field(default_factory=dict)
    submitted: bool = False

    def failure(self) -> str:
        """Serve's own words for the first application that is not running, if any."""
        for name, app in sorted(self.applications.items()):
            if app.get("status") == ApplicationStatus.RUNNING:
                continue
            details = [app.get("message") or ""]
            for dep_name, dep in sorted((app.get("serveDeploymentStatuses") or {}).items()):
                if dep.get("message"):
                    details.append(f"deployment {dep_name}: {dep['message']}")
            text = "; ".join(d for d in details if d)
            if app.get("status") in (ApplicationStatus.DEPLOY_FAILED, ApplicationStatus.UNHEALTHY) or text:
                return f"application {name} is {app.get('status')}" + (f": {text}" if text else "")
        return ""


def application_statuses(details: ServeDetails) -> dict[str, JSON]:
    """The status form of each application (`""` named `default`), as `applicationStatuses` holds it."""
    statuses: dict[str, JSON] = {}
    for name, app in details.applications.items():
        entry: JSON = {"status": app.status}
        if app.message:
            entry["message"] = app.message
        deployments: dict[str, JSON] = {}
        for dep_name, dep in app.deployments.items():
            dep_entry: JSON = {"status": dep.status}
            if dep.message:
                dep_entry["message"] = dep.message
            deployments[dep_name] = dep_entry
        if deployments:
            entry["serveDeploymentStatuses"] = deployments
        statuses[name or constants.DEFAULT_SERVE_APP_NAME] = entry
    return statuses


def config_body(serve_config_v2: str, target_capacity: int | None = None) -> Mapping[str, Any]:
    """The `PUT` body: the YAML as a JSON object (`{}` when empty), with `target_capacity` when given."""
    try:
        parsed = yaml.safe_load(serve_config_v2) if serve_config_v2 else {}
    except yaml.YAMLError as e:
        raise DashboardError(f"failed to unmarshal serveConfigV2: {e}") from e
    if parsed is None:
        parsed = {}
    if not isinstance(parsed, Mapping):
        raise DashboardError("failed to unmarshal serveConfigV2: not a mapping")
    body: JSON = dict(parsed)
    if target_capacity is not None:
        body["target_capacity"] = target_capacity
    return body


async def reconcile_serve(
    client: DashboardClient,
    cache: ServeConfigCache,
    service_key: str,
    cluster_name: str,
    serve_config_v2: str,
    *,
    submit: bool = True,
    target_capacity: int | None = None,
) -> ServeOutcome:
    """Reads the cluster's applications, then submits the config if it is due. DashboardError when a call
    fails (ServeUpdateError, with upstream's longer message, when the submission does)."""
    details = await client.get_serve_details()
    statuses = application_statuses(details)
    ready = bool(statuses) and all(app["status"] == ApplicationStatus.RUNNING for app in statuses.values())
    if not submit:
        return ServeOutcome(ready, statuses)
    cached = cache.get(service_key, cluster_name)
    if cached is not None and cached == serve_config_v2 and statuses:
        return ServeOutcome(ready, statuses)
    try:
        await client.update_serve_applications(config_body(serve_config_v2, target_capacity))
    except DashboardError as e:
        raise ServeUpdateError(
            f"fail to create / update Serve applications. If you observe this error consistently, please "
            f"check {TROUBLESHOOTING} for more details. err: {e}"
        ) from e
    if serve_config_v2:
        cache.put(service_key, cluster_name, serve_config_v2)
    return ServeOutcome(ready, statuses, submitted=True)
