"""The ResourceQuota controller: each quota's `status.hard` is its `spec.hard` and its `status.used` what
the namespace's objects cost (see `localkube.admission.quota`), recounted as kube-controller-manager's
quota controller does: when the quota changes, and when an object it counts is written or deleted (a pod
that finishes or goes gives its compute resources back). The kinds counted most (pods, services,
configmaps, secrets, claims, replication controllers, quotas) are watched; a quota counting any other kind
(`count/deployments.apps`) is also recounted every `RESYNC_SECONDS`, its creates being charged at
admission meanwhile.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from kubesemantics import quantity
from kubesemantics.quantity import QuantityError
from localkube.admission import quota
from localkube.controllers import podstate
from localkube.controllers.api import ControllerApi
from localkube.server.errors import ApiError
from localkube.server.registry import Registry
from localkube.storage import Event, Store

QUOTAS_PREFIX = "/registry/core/resourcequotas/"
_WATCHED = ("pods", "services", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers")
RESYNC_SECONDS = 15.0


def _values(resources: dict[str, Any] | None) -> dict[str, Fraction | str]:
    """A resource list compared as upstream's semantic equality does: by value, not by spelling."""
    found: dict[str, Fraction | str] = {}
    for name, text in (resources or {}).items():
        try:
            found[name] = quantity.parse(text)
        except QuantityError:
            found[name] = str(text)
    return found


class ResourceQuotaController:
    name = "resourcequota"

    def __init__(
        self,
        store: Store,
        api: ControllerApi,
        registry: Registry,
        clock: Callable[[], datetime.datetime] = podstate.now,
    ) -> None:
        self._store, self._api, self._registry, self._clock = store, api, registry, clock
        self._watched = [f"/registry/core/{plural}/" for plural in _WATCHED]
        self.prefixes = (QUOTAS_PREFIX, *(p for p in self._watched if p != QUOTAS_PREFIX))
        self._by_namespace: dict[str, set[str]] = {}

    def observe(self, event: Event) -> Iterable[str]:
        if event.key.startswith(QUOTAS_PREFIX):
            namespace = event.key.removeprefix(QUOTAS_PREFIX).partition("/")[0]
            keys = self._by_namespace.setdefault(namespace, set())
            if event.type == "DELETED":
                keys.discard(event.key)
                return []
            keys.add(event.key)
            return [event.key]
        for prefix in self._watched:
            if event.key.startswith(prefix):
                namespace = event.key.removeprefix(prefix).partition("/")[0]
                return sorted(self._by_namespace.get(namespace, ()))
        return []

    def reconcile(self, key: str) -> float | None:
        resource_quota = self._store.get(key)
        if resource_quota is None:
            return None
        namespace = resource_quota["metadata"]["namespace"]
        hard = dict((resource_quota.get("spec") or {}).get("hard") or {})
        objects: dict[tuple[str, str], list[dict[str, Any]]] = {}
        unwatched = False
        for name in hard:
            counted = quota.counted_resource(name)
            if counted is None or counted in objects:
                continue
            group, plural = counted
            resource_type = self._registry.by_resource(group, plural)
            if resource_type is None or not resource_type.namespaced:
                continue
            objects[counted] = self._store.list(resource_type.prefix(namespace))[0]
            unwatched = unwatched or bool(group) or plural not in _WATCHED
        status = resource_quota.get("status") or {}
        used = {name: value for name, value in (status.get("used") or {}).items() if name in hard}
        used.update(quota.calculate(hard, resource_quota, objects, self._clock()))
        # What no kind served here is charged for (`requests.storage` without a volume provisioner) uses none.
        for name in hard:
            used.setdefault(name, "0")
        desired = {"hard": hard, "used": used}
        if (
            _values(status.get("hard")) != _values(hard)
            or _values(status.get("used")) != _values(used)
            or (set(status) - {"hard", "used"})
        ):
            try:
                self._api.update_status(key, {**resource_quota, "status": desired})
            except ApiError as err:
                if err.code not in (404, 409):
                    raise
                return 0.0 if err.code == 409 else None
        return RESYNC_SECONDS if unwatched else None
