"""Serve on one of a RayService's clusters: its applications (upstream `reconcileServe`,
`updateServeDeployment`, `getAndCheckServeStatus`), submitted when the controller's config cache
(`context.ServeConfigCache`) says so, and the head pod's `ray.io/serve` label (upstream `updateHeadPodServeLabel`), which puts the head behind the serve
Service while its Serve proxy answers its health check.

A pass reads the applications first (readiness comes from that read, before any submission), then submits
`serveConfigV2` with a declarative `PUT` when this operator has not submitted that exact string to that
cluster, or the cluster reports no application at all (its head restarted without GCS fault tolerance).
The calls are bounded by the dashboard client's short timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kuberay.api import constants
from kuberay.api.features import Feature
from kuberay.api.rayservice import ApplicationStatus, ServeSide
from kuberay.controllers import writes
from kuberay.controllers.dashboards import auth_token, dashboard_address, head_service_name
from kuberay.controllers.errors import ReconcileError
from kuberay.controllers.rayservice.context import Pass, ServeConfigCache
from kuberay.rayclient.dashboard import DashboardClient, DashboardError, ServeDetails
from kuberay.rayclient.serveproxy import check_proxy_health, direct_health_url, proxied_health_url
from kuberay.runtime.controller import TemporaryError
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.resources import POD, ObjectKey
from kubesemantics.conditions import is_condition_true

log = logging.getLogger(__name__)
JSON = dict[str, Any]

TROUBLESHOOTING = (
    "Please see the troubleshooting guide https://docs.ray.io/en/latest/cluster/kubernetes/"
    "troubleshooting/rayservice-troubleshooting.html"
)


class ServeUpdateError(ReconcileError, DashboardError):
    """Submitting `serveConfigV2` failed (upstream's longer message): the failure the controller reports
    with a `FailedToUpdateServeApplications` Event."""


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


# --- one pass's Serve steps --------------------------------------------------------------------------------


def head_ready(p: Pass, cluster: JSON) -> bool:
    """`HeadPodReady` with status conditions on; otherwise a running, ready head pod in the cache."""
    if p.ctx.options.gates.enabled(Feature.RAY_CLUSTER_STATUS_CONDITIONS):
        return is_condition_true(cluster.get("status") or {}, "HeadPodReady")
    return any(
        (pod.get("status") or {}).get("phase") == "Running"
        and is_condition_true(pod.get("status") or {}, "Ready")
        for pod in p.head_pods(cluster)
    )


async def dashboard_client(p: Pass, cluster: JSON) -> DashboardClient:
    """A client of the cluster's dashboard, through its head Service (and auth token, when it has one)."""
    ns = p.key.namespace
    head_svc = p.ctx.caches.services.get(ObjectKey(ns, head_service_name(cluster)))
    address = dashboard_address(head_svc, p.ctx.options.cluster_domain)
    if address is None:
        raise TemporaryError(
            f"the head Service of RayCluster {ns}/{cluster['metadata']['name']} has no dashboard port yet"
        )
    try:
        token = await auth_token(p.ctx.client, cluster)
    except DashboardError as e:
        raise TemporaryError(str(e)) from e
    return DashboardClient(p.ctx.dashboard.http, p.ctx.dashboard.base_url(ns, address, cluster), token=token)


async def serve(p: Pass, cluster: JSON, side: ServeSide, *, submit: bool) -> ServeOutcome:
    """The cluster's applications once its head is ready, submitting the config when due (`submit`)."""
    if not head_ready(p, cluster):
        return ServeOutcome(ready=False)
    client = await dashboard_client(p, cluster)
    ns, name = p.key.namespace, cluster["metadata"]["name"]
    target_capacity = p.status.get(side, {}).get("targetCapacity") if p.incremental else None
    try:
        outcome = await reconcile_serve(
            client,
            p.ctx.serve_configs,
            str(p.key),
            name,
            p.model.spec.serve_config_v2 or "",
            submit=submit,
            target_capacity=target_capacity,
        )
    except DashboardError as e:
        if isinstance(e, ServeUpdateError):
            p.event(WARNING, "FailedToUpdateServeApplications",
                    f"Failed to update serve applications to the RayCluster {ns}/{name}: {e}", "Update")  # fmt: skip
        raise TemporaryError(str(e)) from e
    if outcome.submitted:
        p.event(NORMAL, "UpdatedServeApplications",
                f"Updated serve applications to the RayCluster {ns}/{name}", "Update")  # fmt: skip
    return outcome


async def label_head_pod(p: Pass, cluster: JSON) -> None:
    """`ray.io/serve` on the cluster's head pod: "true" while its Serve proxy is healthy (and the spec does
    not exclude the head from the serve Service), else "false"; patched only when it changes."""
    ns, cluster_name = p.key.namespace, cluster["metadata"]["name"]
    heads = p.head_pods(cluster)
    if len(heads) != 1:
        raise TemporaryError(f"found {len(heads)} head. cluster name {cluster_name}, namespace {ns}")
    pod = heads[0]
    value = constants.ENABLE_SERVING_SERVICE_FALSE
    if not p.model.spec.exclude_head_pod_from_serve_svc and await _proxy_healthy(p, pod, cluster):
        value = constants.ENABLE_SERVING_SERVICE_TRUE
    if (pod["metadata"].get("labels") or {}).get(constants.RAY_CLUSTER_SERVING_SERVICE_LABEL) == value:
        return
    pod_name = pod["metadata"]["name"]
    patch = {"metadata": {"labels": {constants.RAY_CLUSTER_SERVING_SERVICE_LABEL: value}}}
    await writes.recorded(
        lambda: p.ctx.client.patch(POD, pod_name, patch, ns),
        p.event,
        "Update",
        (
            "UpdatedHeadPodServeLabel",
            f'Updated the serve label to "{value}" for the Head Pod {ns}/{pod_name}',
        ),
        (
            "FailedToUpdateHeadPodServeLabel",
            f'Failed to update the serve label to "{value}" for the Head Pod {ns}/{pod_name}: {{error}}',
        ),
    )


async def _proxy_healthy(p: Pass, pod: Mapping[str, Any], cluster: JSON) -> bool:
    port = serve_port(cluster)
    api_server = p.ctx.dashboard.api_server
    if api_server is not None:
        url = proxied_health_url(api_server, p.key.namespace, pod["metadata"]["name"], port)
    else:
        pod_ip = (pod.get("status") or {}).get("podIP")
        if not pod_ip:
            return False
        url = direct_health_url(pod_ip, port)
    try:
        await check_proxy_health(p.ctx.dashboard.http, url)
    except DashboardError as e:
        log.debug("serve proxy of %s is not healthy: %s", pod["metadata"]["name"], e)
        return False
    return True


def serve_port(cluster: Mapping[str, Any]) -> int:
    """The head container's serve port (its `serve` named port, else Ray Serve's default)."""
    containers = (
        (((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    ).get("containers") or [{}]
    for port in containers[0].get("ports") or ():
        if port.get("name") == constants.SERVING_PORT_NAME:
            return int(port.get("containerPort") or constants.DEFAULT_SERVING_PORT)
    return constants.DEFAULT_SERVING_PORT
