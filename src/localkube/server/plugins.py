"""The built-in admission plugins kube-apiserver runs on a create, over what the store holds: LimitRanger's
container defaults and Priority's resolution (mutating, before the kind's defaults and validation), then
Priority's check of PriorityClasses and ResourceQuota (validating, last), whose charge to the quotas'
`status.used` is written once the object is stored. Their refusals are 403 Forbidden in the API server's
words (`pods "web-1" is forbidden: exceeded quota: ...`); the rules are in `localkube.admission`.
"""

from __future__ import annotations

import datetime
from typing import Any

from localkube.admission import limitranger, priority, quota
from localkube.admission.errors import AdmissionControlError
from localkube.server.errors import ApiError, qualified
from localkube.server.registry import Registry, ResourceType
from localkube.storage import Store
from localkube.storage.errors import Conflict, NotFound

Charges = list[tuple[str, int, dict[str, str]]]
"""What a create costs: (quota key, its resourceVersion read, its new `status.used`)."""


def refused(resource_type: ResourceType, name: str, error: AdmissionControlError) -> ApiError:
    """admission.NewForbidden: the resource, the object's name (its generateName before one is made)."""
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(resource_type.plural, resource_type.group)} "{name}" is forbidden: {error}',
        {
            "name": name,
            "kind": resource_type.plural,
            **({"group": resource_type.group} if resource_type.group else {}),
        },
    )


def _is_pod(resource_type: ResourceType) -> bool:
    return resource_type.plural == "pods" and not resource_type.group and not resource_type.custom


class AdmissionPlugins:
    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry

    def _objects(self, group: str, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        found = self._registry.by_resource(group, plural)
        if found is None:
            return []
        return self._store.list(found.prefix(namespace))[0]

    def mutate_create(
        self, resource_type: ResourceType, namespace: str | None, obj: dict[str, Any], name: str
    ) -> None:
        """LimitRanger and Priority on a new pod, in place, before the kind's defaults; `name` is what the
        request named (mutating admission runs before a `generateName` is made into a name)."""
        if not _is_pod(resource_type):
            return
        limitranger.apply_defaults(obj, self._objects("", "limitranges", namespace))
        try:
            priority.resolve(obj, self._objects("scheduling.k8s.io", "priorityclasses", None))
        except priority.PriorityRefused as error:
            raise refused(resource_type, name, error) from None

    def validate_write(self, resource_type: ResourceType, obj: dict[str, Any], creating: bool) -> None:
        """Priority's validating half: at most one PriorityClass is the global default."""
        if resource_type.plural != "priorityclasses" or resource_type.group != "scheduling.k8s.io":
            return
        name = str((obj.get("metadata") or {}).get("name") or "")
        try:
            priority.check_class(obj, self._objects("scheduling.k8s.io", "priorityclasses", None), creating)
        except priority.PriorityRefused as error:
            raise refused(resource_type, name, error) from None

    def charge(self, resource_type: ResourceType, namespace: str | None, obj: dict[str, Any]) -> Charges:
        """ResourceQuota on a create: refuses what does not fit, returns what to charge once it is stored."""
        if not resource_type.namespaced or not namespace:
            return []
        quotas = self._objects("", "resourcequotas", namespace)
        if not quotas:
            return []
        name = str((obj.get("metadata") or {}).get("name") or "")
        now = datetime.datetime.now(datetime.UTC)
        try:
            changed = quota.charge(quotas, resource_type.plural, resource_type.group, obj, now)
        except quota.QuotaRefused as error:
            raise refused(resource_type, name, error) from None
        quota_type = self._registry.by_resource("", "resourcequotas")
        assert quota_type is not None
        return [
            (quota_type.key(namespace, q["metadata"]["name"]), int(q["metadata"]["resourceVersion"]), used)
            for q, used in changed
        ]

    def record(self, charges: Charges) -> None:
        """Writes what a stored create cost into its quotas' `status.used`, as the admission's quota update
        does; a quota changed or gone meanwhile is left to the quota controller's next count."""
        for key, revision, used in charges:
            current = self._store.get(key)
            if current is None:
                continue
            current.setdefault("status", {})["used"] = used
            try:
                self._store.update(key, current, revision)
            except (Conflict, NotFound):
                continue
