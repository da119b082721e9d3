"""mTLS between Ray processes (`spec.tlsOptions.enabled`, gate RayClusterMTLS).

cert-manager issues one Secret for the head (`ray-head-secret-<c>`) and one for the workers
(`ray-worker-secret-<c>`); it is mounted at `/etc/ray/tls` and Ray is pointed at it with `RAY_USE_TLS` and
the three file paths. The certificate learns each pod's IP only after the pod exists, so every TLS pod first
runs `wait-for-tls-ip-san`, which blocks until the mounted certificate lists the pod IP as an IP SAN.
All additions are idempotent: existing env vars, mounts (by name or path), the volume and the init
container (by name) are kept as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.features import Feature, FeatureGates
from kuberay.builders import container

CERT_FILE = constants.RAY_TLS_CERT_MOUNT_PATH + "/tls.crt"

# Waits until the certificate names this pod's IP (whole-address match) as an IP SAN.
WAIT_FOR_IP_SAN_SCRIPT = f"""cert="{CERT_FILE}"
pod_ip="${{POD_IP:-$(hostname -i 2>/dev/null | awk '{{print $1}}')}}"
if ! command -v openssl >/dev/null 2>&1; then
  echo "openssl is not installed: cannot check the IP SANs of ${{cert}}" >&2
  exit 1
fi
until openssl x509 -in "${{cert}}" -noout -text 2>/dev/null | grep -qE "IP Address:${{pod_ip}}([^0-9.]|$)"; do
  echo "Waiting for the TLS certificate to list IP SAN ${{pod_ip}}; checking again in 5s"
  sleep 5
done
echo "The TLS certificate lists IP SAN ${{pod_ip}}"
"""


def is_enabled(cluster_spec: Mapping[str, Any], gates: FeatureGates) -> bool:
    return (
        gates.enabled(Feature.RAY_CLUSTER_MTLS)
        and (cluster_spec.get("tlsOptions") or {}).get("enabled") is True
    )


def per_node_type(cluster_name: str, node_type: str, head_prefix: str, worker_prefix: str) -> str:
    """`<head_prefix>-<cluster>` for the head, `<worker_prefix>-<cluster>` for the workers (upstream's names
    of the mTLS objects, one for the head and one shared by every worker)."""
    return f"{head_prefix if node_type == constants.HEAD_NODE else worker_prefix}-{cluster_name}"


def secret_name(cluster_name: str, node_type: str) -> str:
    """The Secret cert-manager writes the head's or the workers' certificate into."""
    return per_node_type(
        cluster_name, node_type, constants.RAY_HEAD_SECRET_PREFIX, constants.RAY_WORKER_SECRET_PREFIX
    )


def _mount() -> container.JSON:
    return {
        "name": constants.RAY_TLS_VOLUME_NAME,
        "readOnly": True,
        "mountPath": constants.RAY_TLS_CERT_MOUNT_PATH,
    }


def set_container_config(target: container.JSON) -> None:
    """`SetContainerTLSConfig`: the TLS env vars and the certificate mount."""
    container.add_env_if_absent(target, constants.RAY_USE_TLS, "1")
    container.add_env_if_absent(target, constants.RAY_TLS_SERVER_CERT, CERT_FILE)
    container.add_env_if_absent(
        target, constants.RAY_TLS_SERVER_KEY, constants.RAY_TLS_CERT_MOUNT_PATH + "/tls.key"
    )
    container.add_env_if_absent(
        target, constants.RAY_TLS_CA_CERT, constants.RAY_TLS_CERT_MOUNT_PATH + "/ca.crt"
    )
    if not (
        container.mount_exists(target, constants.RAY_TLS_VOLUME_NAME)
        or container.mounted_at(target, constants.RAY_TLS_CERT_MOUNT_PATH)
    ):
        container.append_mount(target, _mount())


def configure_pod(pod_spec: container.JSON, cluster_name: str, node_type: str) -> None:
    """mTLS on a Ray pod: the certificate volume, the Ray container and `wait-gcs-ready`, and the
    `wait-for-tls-ip-san` init container prepended so it runs first."""
    if not container.volume_exists(pod_spec, constants.RAY_TLS_VOLUME_NAME):
        container.append_volume(
            pod_spec,
            {
                "name": constants.RAY_TLS_VOLUME_NAME,
                "secret": {"secretName": secret_name(cluster_name, node_type)},
            },
        )
    ray = pod_spec["containers"][constants.RAY_CONTAINER_INDEX]
    set_container_config(ray)
    init_containers = pod_spec.get("initContainers") or []
    for init in init_containers:
        if init.get("name") == constants.WAIT_GCS_READY_INIT_CONTAINER_NAME:
            set_container_config(init)
    if any(init.get("name") == constants.WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME for init in init_containers):
        return
    wait = container.image_of(ray, constants.WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME)
    wait |= {
        "command": ["sh", "-c"],
        "args": [WAIT_FOR_IP_SAN_SCRIPT],
        "env": [container.field_env(constants.POD_IP, "status.podIP")],
        "resources": container.fixed_resources("50m", "64Mi"),
        "volumeMounts": [_mount()],
    }
    if ray.get("securityContext") is not None:
        wait["securityContext"] = copy.deepcopy(ray["securityContext"])
    pod_spec["initContainers"] = [wait, *init_containers]
