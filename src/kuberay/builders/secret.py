"""The Secret holding a RayCluster's Ray auth token (`authOptions.mode: token` without a `secretName`).

Upstream creates it once, named `CheckName(<cluster>)`, with the token under `auth_token` (written as
`stringData`), and never updates it. The token itself (upstream: 32 random bytes, standard base64) is an
input: builders draw no random numbers.
"""

from __future__ import annotations

from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import names, ownership


def needs_auth_secret(cluster: RayCluster) -> bool:
    """Whether the operator must make the auth Secret: auth options given, mode not `disabled`, no
    Kubernetes token auth and no user `secretName`. (As upstream, an empty mode still gets a Secret.)"""
    options = cluster.spec.auth_options
    return (
        options is not None
        and options.mode != "disabled"
        and options.enable_k8s_token_auth is not True
        and not options.secret_name
    )


def build_auth_secret(cluster: RayCluster, token: str) -> dict[str, Any]:
    """The auth token Secret of `cluster`, holding `token`."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": names.check_name(cluster.name),
            "namespace": cluster.namespace,
            "labels": {constants.RAY_CLUSTER_LABEL: cluster.name},
            "ownerReferences": ownership.controlled_by(cluster),
        },
        "stringData": {constants.RAY_AUTH_TOKEN_SECRET_KEY: token},
    }
