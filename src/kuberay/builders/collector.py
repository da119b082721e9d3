"""The history-server collector sidecar (gate RayClusterHistoryServer and
`spec.historyServerOptions.collectorOptions`).

The collector receives Ray's exported events on port 8084 and reads the Ray logs from the shared
`ray-logs` volume (added by the pod builder), then ships both to the history server. It is told who it is
through env: the cluster, its role, and (from the RayCluster's labels) which RayJob or RayService owns it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature, FeatureGates
from kuberay.builders import container

EVENTS_EXPORT_ADDRESS = f"http://localhost:{constants.DEFAULT_COLLECTOR_EVENTS_PORT}/v1/events"


def options_of(cluster_spec: Mapping[str, Any], gates: FeatureGates) -> Mapping[str, Any] | None:
    """The collector options when the sidecar is wanted, else None."""
    if not gates.enabled(Feature.RAY_CLUSTER_HISTORY_SERVER):
        return None
    options: Mapping[str, Any] | None = (cluster_spec.get("historyServerOptions") or {}).get(
        "collectorOptions"
    )
    return options


def build_container(
    options: Mapping[str, Any],
    node_type: str,
    cluster_name: str,
    namespace: str,
    head_fqdn: str,
    cluster_labels: Mapping[str, str],
) -> container.JSON:
    """`BuildCollectorContainer` (token auth env is added by the caller)."""
    resources = options.get("resources")
    if resources is None:
        resources = {
            "limits": {"cpu": "200m", "memory": "256Mi"},
            "requests": {"cpu": "50m", "memory": "64Mi"},
        }
    sidecar: container.JSON = {"name": constants.COLLECTOR_CONTAINER_NAME}
    if options.get("image"):
        sidecar["image"] = options["image"]
    sidecar["imagePullPolicy"] = options.get("imagePullPolicy") or "IfNotPresent"
    sidecar["resources"] = copy.deepcopy(resources)
    env = [
        container.field_env(constants.POD_IP, "status.podIP"),
        container.value_env(constants.RAY_CLUSTER_NAME, cluster_name),
        container.value_env(constants.RAY_CLUSTER_NAMESPACE, namespace),
        container.value_env(constants.RAY_ROLE, "Head" if node_type == constants.HEAD_NODE else "Worker"),
        container.value_env(constants.EVENTS_PORT, str(constants.DEFAULT_COLLECTOR_EVENTS_PORT)),
    ]
    if head_fqdn:
        env.append(container.value_env(constants.FQ_RAY_IP, head_fqdn))
    for label, name in (
        (constants.RAY_ORIGINATED_FROM_CRD_LABEL, constants.OWNER_KIND),
        (constants.RAY_ORIGINATED_FROM_CR_NAME_LABEL, constants.OWNER_NAME),
    ):
        if cluster_labels.get(label):
            env.append(container.value_env(name, cluster_labels[label]))
    user_env = copy.deepcopy(list(options.get("env") or ()))
    if node_type == constants.HEAD_NODE and not any(
        e.get("name") == constants.RAY_DASHBOARD_ADDRESS for e in user_env
    ):
        env.append(
            container.value_env(
                constants.RAY_DASHBOARD_ADDRESS, f"http://localhost:{constants.DEFAULT_DASHBOARD_PORT}"
            )
        )
    sidecar["env"] = env + user_env
    return sidecar
