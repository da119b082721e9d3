"""Helpers for the runtime's integration tests: a client for a localkube, namespaces, waiting."""

from __future__ import annotations

import uuid
from typing import Any

from kuberay.runtime import errors
from kuberay.runtime.client import Client, load_config
from kuberay.runtime.resources import NAMESPACE, SERVICE_ACCOUNT
from support.eventually import eventually


def client_for(localkube: Any, **kwargs: Any) -> Client:
    return Client.from_config(load_config(str(localkube.kubeconfig)), **kwargs)


async def new_namespace(client: Client) -> str:
    """A fresh namespace, returned once its `default` ServiceAccount exists: a real control plane refuses pods
    (403, "error looking up service account") until its controller-manager has made it."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    await client.create(NAMESPACE, {"metadata": {"name": name}})

    async def made() -> bool:
        try:
            await client.get(SERVICE_ACCOUNT, "default", name)
        except errors.NotFoundError:
            return False
        return True

    await eventually(made, 30, f"the default ServiceAccount of {name}", every=0.05)
    return name


# The ConfigMap the control plane publishes in every namespace (kube-root-ca.crt, as kube-apiserver's
# root-CA publisher does): these tests use ConfigMaps as a toy kind and watch only their own.
NOT_ROOT_CA = "metadata.name!=kube-root-ca.crt"


def not_root_ca(event: Any) -> bool:
    return bool(event.obj["metadata"]["name"] != "kube-root-ca.crt")
