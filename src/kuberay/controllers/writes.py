"""Writes a controller records as upstream's RayJob and RayService controllers record them, shared by both:

- `recorded`: one write with a Normal Event when it worked and a Warning Event (the error in its message)
  when it did not; "already done" errors (AlreadyExists on a create, NotFound on a delete) are success
  without an Event.
- `reconcile_service`: a Service the owner keeps pointed at one RayCluster (a RayJob's or RayService's
  head Service, a RayService's serve Service): created when missing; when its `ray.io/cluster` selector
  names another cluster, its spec is replaced (keeping the allocated clusterIP); otherwise left alone.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kuberay.api import constants
from kuberay.runtime import errors
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.events import NORMAL, WARNING
from kuberay.runtime.frozen import thaw
from kuberay.runtime.resources import SERVICE, ObjectKey

# (type, reason, message, action)
RecordEvent = Callable[[str, str, str, str], None]


async def recorded(
    write: Callable[[], Awaitable[object]],
    event: RecordEvent,
    action: str,
    done: tuple[str, str],
    failed: tuple[str, str],
    *,
    already: type[errors.KubeError] | None = None,
    failures: tuple[type[Exception], ...] = (errors.KubeError,),
) -> None:
    """Runs `write`; Normal Event `done` (reason, message) on success; on one of `failures`, Warning Event
    `failed` (reason, message with `{error}`) and the error re-raised."""
    try:
        await write()
    except Exception as e:
        if already is not None and isinstance(e, already):
            return
        if not isinstance(e, failures):
            raise
        event(WARNING, failed[0], failed[1].format(error=e), action)
        raise
    event(NORMAL, done[0], done[1], action)


async def reconcile_service(
    client: Client, services: Store, desired: Mapping[str, Any], event: RecordEvent, *, update: bool = True
) -> None:
    """Creates the Service or points it at the desired cluster; `update=False` only creates."""
    ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
    existing = services.get(ObjectKey(ns, name))
    if existing is None:
        await recorded(
            lambda: client.create(SERVICE, desired),
            event,
            "Create",
            ("CreatedService", f"Created the service {ns}/{name}"),
            ("FailedToCreateService", f"Failed to create the service {ns}/{name}, {{error}}"),
            already=errors.AlreadyExistsError,
        )
        return
    selector_key = constants.RAY_CLUSTER_LABEL
    current = ((existing.get("spec") or {}).get("selector") or {}).get(selector_key)
    if not update or current == desired["spec"]["selector"].get(selector_key):
        return
    updated = thaw(existing)
    spec = copy.deepcopy(dict(desired["spec"]))
    if (existing.get("spec") or {}).get("clusterIP"):
        spec["clusterIP"] = existing["spec"]["clusterIP"]
    updated["spec"] = spec
    await recorded(
        lambda: client.update(SERVICE, updated),
        event,
        "Update",
        ("UpdatedService", f"Updated the service {ns}/{name}"),
        ("FailedToUpdateService", f"Failed to update the service {ns}/{name}, {{error}}"),
    )
