"""The Ray autoscaler sidecar of the head pod (`spec.enableInTreeAutoscaling: true`).

The container runs `ray kuberay-autoscaler` with the head's image, reads its cluster's name and namespace
from the pod's own metadata (downward API), and talks to the API server with the head's service account.
The generated start line is also exported as `KUBERAY_GEN_AUTOSCALER_START_CMD`, so users who replace the
args can still run it. `autoscalerOptions` is applied last: resources, image, pull policy and security
context replace; env, envFrom and mounts append; command and args replace only when non-empty.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.builders import container

START_COMMAND = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)
VERSION_V1 = "v1"
VERSION_V2 = "v2"


def is_enabled(cluster_spec: Mapping[str, Any]) -> bool:
    return cluster_spec.get("enableInTreeAutoscaling") is True


def version(cluster_spec: Mapping[str, Any]) -> str | None:
    """`autoscalerOptions.version` (`v1`, `v2`), or None when unset (Ray then picks its default)."""
    value = (cluster_spec.get("autoscalerOptions") or {}).get("version")
    return str(value) if value is not None else None


def build_container(image: str, login_shell: bool) -> container.JSON:
    """`BuildAutoscalerContainer`, before token auth, TLS and the user's overrides."""
    sidecar: container.JSON = {"name": constants.AUTOSCALER_CONTAINER_NAME}
    if image:
        sidecar["image"] = image
    sidecar |= {
        "imagePullPolicy": "IfNotPresent",
        "env": [
            container.field_env(
                constants.RAY_CLUSTER_NAME, f"metadata.labels['{constants.RAY_CLUSTER_LABEL}']"
            ),
            container.field_env(constants.RAY_CLUSTER_NAMESPACE, "metadata.namespace"),
            container.field_env(constants.RAY_HEAD_POD_NAME, "metadata.name"),
            {"name": constants.KUBERAY_CRD_VER, "value": constants.VERSION},
            {"name": constants.KUBERAY_GEN_AUTOSCALER_START_CMD, "value": START_COMMAND},
        ],
        "command": container.shell_command(login_shell),
        "args": [START_COMMAND],
        "resources": container.fixed_resources("500m", "512Mi"),
    }
    return sidecar


def merge_overrides(sidecar: container.JSON, options: Mapping[str, Any] | None) -> None:
    """`mergeAutoscalerOverrides`: `autoscalerOptions` on top of the generated container."""
    if not options:
        return
    for key in ("resources", "image", "imagePullPolicy", "securityContext"):
        if options.get(key) is not None:
            sidecar[key] = copy.deepcopy(options[key])
    for key in ("env", "envFrom", "volumeMounts"):
        if options.get(key):
            sidecar.setdefault(key, []).extend(copy.deepcopy(options[key]))
    for key in ("command", "args"):
        if options.get(key):
            sidecar[key] = list(options[key])
