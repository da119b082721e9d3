"""The plugin's connection to the cluster: kubectl's config flags, the client, and errors worded for users.

The flags are kubectl's (`--kubeconfig`, `--context`, `-n/--namespace`), read as kubectl reads them: the
kubeconfig path, else `KUBECONFIG`, else `~/.kube/config`; the namespace from the flag, else the context's,
else `default`. Every failure a command reports is a `PluginError`, printed as `Error: <message>` with
exit code 1, as cobra does for upstream's plugin. A 404 on a whole collection means the API server does
not serve the ray.io resource at all, which this module says in so many words (install the CRDs) instead
of the server's bare "could not find the requested resource".
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from kuberay.kubectl.errors import KubectlPluginError
from kuberay.kubectl.generation import FIELD_MANAGER
from kuberay.runtime import errors
from kuberay.runtime.client import Client, ConfigurationError, load_config
from kuberay.runtime.resources import Resource

DEPLOYMENT = Resource("apps/v1", "Deployment", "deployments")


class PluginError(KubectlPluginError):
    """What a command failed with; its message is the whole story for the user."""


class TargetError(KubectlPluginError, ValueError):
    """A `TYPE/NAME` argument that names no resource the command handles (a usage error on the command
    line, upstream's wording)."""


@dataclass
class KubeFlags:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None


@dataclass
class Kube:
    client: Client
    namespace: str
    namespace_from_flag: bool
    context: str


def namespace(flags: KubeFlags) -> str:
    """The namespace a command works in without talking to the server (`default` without a kubeconfig,
    as kubectl's loader does)."""
    if flags.namespace:
        return flags.namespace
    try:
        return load_config(flags.kubeconfig, flags.context).namespace
    except ConfigurationError:
        return "default"


@contextlib.asynccontextmanager
async def connect(flags: KubeFlags) -> AsyncIterator[Kube]:
    try:
        config = load_config(flags.kubeconfig, flags.context)
    except ConfigurationError as e:
        raise PluginError(str(e)) from e
    client = Client.from_config(config, user_agent="kubectl-ray", field_manager=FIELD_MANAGER)
    try:
        yield Kube(client, flags.namespace or config.namespace, bool(flags.namespace), config.context_name)
    finally:
        await client.close()


def describe(error: errors.KubeError, resource: Resource | None = None) -> str:
    """The server's message, or for a ray.io kind the server does not serve, what to do about it."""
    if (
        isinstance(error, errors.NotFoundError)
        and resource is not None
        and resource.group == "ray.io"
        and not error.details.get("name")
    ):
        return (
            f"the server does not serve {resource.plural}.{resource.group} ({resource.api_version}): "
            f"the KubeRay CRDs are not installed in this cluster (see `kubectl get crd {resource}`)"
        )
    return error.message
