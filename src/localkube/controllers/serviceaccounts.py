"""The ServiceAccount controller: every namespace that is not terminating has a ServiceAccount named
`default`, made when the namespace appears and again if it is deleted, as on a real cluster (a pod that
names no ServiceAccount runs as it and gets its token)."""

from __future__ import annotations

from collections.abc import Iterable

from localkube.controllers.api import ControllerApi
from localkube.server.errors import ApiError
from localkube.storage import Event, Store

NAMESPACES_PREFIX = "/registry/core/namespaces/"
ACCOUNTS_PREFIX = "/registry/core/serviceaccounts/"
DEFAULT = "default"


class ServiceAccountController:
    name = "serviceaccount"
    prefixes = (NAMESPACES_PREFIX, ACCOUNTS_PREFIX)

    def __init__(self, store: Store, api: ControllerApi) -> None:
        self._store = store
        self._api = api

    def observe(self, event: Event) -> Iterable[str]:
        if event.key.startswith(NAMESPACES_PREFIX):
            return [] if event.type == "DELETED" else [event.key]
        namespace, _, name = event.key.removeprefix(ACCOUNTS_PREFIX).partition("/")
        return [NAMESPACES_PREFIX + namespace] if name == DEFAULT and event.type == "DELETED" else []

    def reconcile(self, key: str) -> float | None:
        namespace = self._store.get(key)
        if namespace is None or namespace["metadata"].get("deletionTimestamp"):
            return None
        name = namespace["metadata"]["name"]
        if self._store.get(f"{ACCOUNTS_PREFIX}{name}/{DEFAULT}") is not None:
            return None
        try:
            account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}}
            self._api.create("", "serviceaccounts", name, account)
        except ApiError as err:
            if err.code not in (403, 409):  # the namespace began terminating; someone made it first
                raise
        return None
