"""The history-server collector sidecar (gate RayClusterHistoryServer and
`spec.historyServerOptions.collectorOptions`).

The collector receives Ray's exported events on port 8084 and reads the Ray logs from the shared
`ray-logs` volume (added by the pod builder), then ships both to the history server. It is told who it is
through env: the cluster, its role, and (from the RayCluster's labels) which RayJob or RayService owns it.
On the head, the Ray container gets a preStop hook that waits for the collector's final snapshot
(`add_head_pre_stop`), so that a deleted pod's dashboard is still up when it is taken.
"""

from __future__ import annotations

import copy
import json
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


# The head container's preStop hook when it already has one: a Python program (every Ray image has Python;
# no shell or curl needed) that asks the collector for the final snapshot and waits, bounded, then does what
# the user's hook did: runs its command (argv[2:]), or with `--get` makes its HTTP request, as the kubelet
# would (to the pod's address when no host is given). Ours goes first: a user's hook is often `ray stop`,
# which takes the dashboard down.
_COMPOSED_HOOK = """\
import json, os, socket, sys, urllib.request as r
def get(url, headers={}):
    r.urlopen(r.Request(url, headers=headers), timeout=60).read()
try:
    get(sys.argv[1])
except Exception as e:
    print("the history collector's final snapshot:", e, file=sys.stderr)
if sys.argv[2] == "--get":
    scheme, host, port, path, headers = sys.argv[3:8]
    get(f"{scheme}://{host or socket.gethostbyname(socket.gethostname())}:{port}{path}", json.loads(headers))
else:
    os.execvp(sys.argv[2], sys.argv[2:])
"""


def _then(user: Mapping[str, Any], ray: Mapping[str, Any]) -> list[str] | None:
    """The composed hook's arguments after the collector's URL that do what the user's hook does, or None
    for a hook this cannot do (a tcpSocket one, which the kubelet does not run either; a named port the
    container does not have)."""
    if "exec" in user:
        command = [str(c) for c in (user["exec"] or {}).get("command") or ()]
        return command or None
    if "sleep" in user:
        return ["sleep", str((user["sleep"] or {}).get("seconds", 0))]
    if "httpGet" in user:
        get = user["httpGet"] or {}
        port = get.get("port")
        if not str(port).isdigit():
            named = [p for p in ray.get("ports") or () if p.get("name") == port]
            if not named:
                return None
            port = named[0]["containerPort"]
        path = str(get.get("path") or "/")
        headers = {h["name"]: h["value"] for h in get.get("httpHeaders") or ()}
        scheme = str(get.get("scheme") or "HTTP").lower()
        host = str(get.get("host") or "")
        path = path if path.startswith("/") else "/" + path
        return ["--get", scheme, host, str(port), path, json.dumps(headers, sort_keys=True)]
    return None


def add_head_pre_stop(ray: container.JSON) -> None:
    """Gives the head's Ray container a preStop hook that waits for the collector's final snapshot (the
    kubelet sends the container SIGTERM only once the hook is over, within its grace period), so that the
    snapshot is taken while the dashboard is still up: a pod's containers are otherwise all signalled at
    once, and the dashboard would be gone before the collector asked it. A user's hook still runs, after."""
    port = constants.DEFAULT_COLLECTOR_EVENTS_PORT  # the sidecar's EVENTS_PORT, which users may not set
    lifecycle = ray.setdefault("lifecycle", {})
    user = lifecycle.get("preStop")
    if not user:
        lifecycle["preStop"] = {"httpGet": {"path": constants.COLLECTOR_FINAL_SNAPSHOT_PATH, "port": port}}
        return
    then = _then(user, ray)
    if then is None:
        return  # the user's hook as it is; the collector snapshots on its own SIGTERM
    url = f"http://localhost:{port}{constants.COLLECTOR_FINAL_SNAPSHOT_PATH}"
    lifecycle["preStop"] = {"exec": {"command": ["python", "-c", _COMPOSED_HOOK, url, *then]}}
