"""Ray token authentication on Ray pods (`spec.authOptions.mode: token`).

Two flavours: a static token read from a Secret (`RAY_AUTH_TOKEN`), or Kubernetes token auth
(`enableK8sTokenAuth: true`), where Ray verifies a projected service-account token mounted at
`/var/run/secrets/ray.io/serviceaccount`. The same env goes on every container that talks to Ray: the Ray
container, the `wait-gcs-ready` init container, the autoscaler and the history collector. Every addition
is skipped when the user already set that env var (by name) or mount (by name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.builders import container, names

AUTH_MODE_TOKEN = "token"


def is_enabled(cluster_spec: Mapping[str, Any]) -> bool:
    return (cluster_spec.get("authOptions") or {}).get("mode") == AUTH_MODE_TOKEN


def is_k8s_token_auth(auth_options: Mapping[str, Any] | None) -> bool:
    return (auth_options or {}).get("enableK8sTokenAuth") is True


def secret_name(cluster_name: str, auth_options: Mapping[str, Any] | None) -> str:
    """The Secret holding the token: `authOptions.secretName`, else `CheckName(<cluster>)`."""
    return (auth_options or {}).get("secretName") or names.check_name(cluster_name)


def set_container_env(
    cluster_name: str, target: container.JSON, auth_options: Mapping[str, Any] | None
) -> None:
    """`SetContainerTokenAuthEnvVars`."""
    container.add_env_if_absent(target, constants.RAY_AUTH_MODE, AUTH_MODE_TOKEN)
    if is_k8s_token_auth(auth_options):
        container.add_env_if_absent(target, constants.RAY_ENABLE_K8S_TOKEN_AUTH, "true")
        if not container.mount_exists(target, constants.RAY_TOKEN_VOLUME_NAME):
            container.append_mount(
                target,
                {
                    "name": constants.RAY_TOKEN_VOLUME_NAME,
                    "readOnly": True,
                    "mountPath": constants.RAY_TOKEN_MOUNT_PATH,
                },
            )
    elif not container.env_exists(target, constants.RAY_AUTH_TOKEN):
        reference = {
            "name": secret_name(cluster_name, auth_options),
            "key": constants.RAY_AUTH_TOKEN_SECRET_KEY,
        }
        container.append_env(
            target, {"name": constants.RAY_AUTH_TOKEN, "valueFrom": {"secretKeyRef": reference}}
        )


def add_token_volume(pod_spec: container.JSON) -> None:
    """The projected service-account token volume Ray verifies under K8s token auth (once per pod)."""
    if not container.volume_exists(pod_spec, constants.RAY_TOKEN_VOLUME_NAME):
        container.append_volume(
            pod_spec,
            {
                "name": constants.RAY_TOKEN_VOLUME_NAME,
                "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
            },
        )


def configure_pod(
    cluster_name: str, pod_spec: container.JSON, auth_options: Mapping[str, Any] | None
) -> None:
    """Token auth on a Ray pod: the Ray container, the projected token volume (K8s token auth) and the
    `wait-gcs-ready` init container (user init containers are left alone)."""
    set_container_env(cluster_name, pod_spec["containers"][constants.RAY_CONTAINER_INDEX], auth_options)
    if is_k8s_token_auth(auth_options):
        add_token_volume(pod_spec)
    for init in pod_spec.get("initContainers") or ():
        if init.get("name") == constants.WAIT_GCS_READY_INIT_CONTAINER_NAME:
            set_container_env(cluster_name, init, auth_options)
