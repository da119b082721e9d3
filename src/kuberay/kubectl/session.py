"""`kubectl ray session`: forwards the Ray head's ports to localhost through `kubectl port-forward`.

As upstream, the forward is the real `kubectl port-forward service/<head service>` run as a child process,
so it works on any cluster kubectl reaches, and it is started again 3 s after each failure: kubectl resolves
the service to a pod once, so when the head pod is replaced the old forward fails and the next one finds
the new head. Ports: a RayCluster's dashboard (8265) and client (10001), a RayJob's dashboard, a
RayService's dashboard and Serve (8000).
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

from kuberay.kubectl.kube import Kube, KubeFlags, PluginError, TargetError, describe
from kuberay.rayresources import RAYCLUSTER, RAYJOB, RAYSERVICE
from kuberay.runtime import errors

RECONNECT_DELAY = 3.0
DASHBOARD = ("Ray Dashboard", 8265)
CLIENT = ("Ray Interactive Client", 10001)
SERVE = ("Ray Serve", 8000)
PORTS = {"raycluster": [DASHBOARD, CLIENT], "rayjob": [DASHBOARD], "rayservice": [DASHBOARD, SERVE]}
RESOURCES = {"raycluster": RAYCLUSTER, "rayjob": RAYJOB, "rayservice": RAYSERVICE}
# Where each kind's status names the head service.
SERVICE_PATH = {
    "raycluster": ("head", "serviceName"),
    "rayjob": ("rayClusterStatus", "head", "serviceName"),
    "rayservice": ("activeServiceStatus", "rayClusterStatus", "head", "serviceName"),
}


def parse_target(arg: str) -> tuple[str, str]:
    """(kind, name); the kind prefix is case-sensitive, as upstream's."""
    parts = arg.split("/")
    if len(parts) == 1:
        return "raycluster", parts[0]
    if len(parts) != 2 or not parts[1]:
        raise TargetError(f"invalid resource type/name: {arg}")
    if parts[0] not in PORTS:
        raise TargetError(f"unsupported resource type: {parts[0]}")
    return parts[0], parts[1]


async def head_service(kube: Kube, kind: str, name: str) -> str:
    resource = RESOURCES[kind]
    try:
        obj = await kube.client.get(resource, name, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"unable to find {resource.kind} {name}: {describe(e, resource)}") from e
    value: Any = obj.get("status") or {}
    for key in SERVICE_PATH[kind]:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    return str(value or "")


def kubectl(flags: KubeFlags, context: str) -> list[str]:
    """The real kubectl, pointed at the same kubeconfig and context as this command."""
    args = ["kubectl"]
    if flags.kubeconfig:
        args += ["--kubeconfig", flags.kubeconfig]
    if context:
        args += ["--context", context]
    return args


def kubectl_args(
    flags: KubeFlags,
    context: str,
    namespace: str,
    service: str,
    ports: list[tuple[str, int]],
    local_port: int | None = None,
) -> list[str]:
    """`kubectl port-forward` of the service's ports to the same local ports (`local_port=0`: free ones)."""
    args = [*kubectl(flags, context), "port-forward", "-n", namespace, f"service/{service}"]
    return args + [f"{'' if local_port == 0 else port}:{port}" for _, port in ports]


def forward(args: list[str], verbose: bool) -> None:
    """Runs kubectl's port-forward until it exits 0 (or the user interrupts), restarting it on failure."""
    while True:
        if verbose:
            print(f"Running: {' '.join(args)}", flush=True)
        code = subprocess.call(args)
        if code == 0:
            return
        print(f"failed to port-forward: exit status {code}. Retrying in 3s ...\n", flush=True)
        time.sleep(RECONNECT_DELAY)
