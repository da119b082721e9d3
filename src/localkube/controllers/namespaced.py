"""Controllers that keep one object in every namespace that is not terminating, made when the namespace
appears, made again if it is deleted, and put back if it drifts (as kube-controller-manager's
ServiceAccount and root-CA publishers do)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from localkube.controllers.api import ControllerApi
from localkube.server.errors import ApiError
from localkube.storage import Event, Store

NAMESPACES_PREFIX = "/registry/core/namespaces/"


class EveryNamespace:
    """Keeps `desired()`, named `object_name`, in each namespace; `prefix` is where its kind is stored."""

    name = ""
    plural = ""
    prefix = ""
    object_name = ""

    def __init__(self, store: Store, api: ControllerApi) -> None:
        self._store = store
        self._api = api
        self.prefixes = (NAMESPACES_PREFIX, self.prefix)

    def desired(self) -> dict[str, Any]:
        raise NotImplementedError

    def drifted(self, existing: dict[str, Any]) -> dict[str, Any] | None:
        """`existing` put back as it should be, or None when it is fine."""
        return None

    def observe(self, event: Event) -> Iterable[str]:
        if event.key.startswith(NAMESPACES_PREFIX):
            return [] if event.type == "DELETED" else [event.key]
        namespace, _, name = event.key.removeprefix(self.prefix).partition("/")
        return [NAMESPACES_PREFIX + namespace] if name == self.object_name else []

    def reconcile(self, key: str) -> float | None:
        namespace = self._store.get(key)
        if namespace is None or namespace["metadata"].get("deletionTimestamp"):
            return None
        name = namespace["metadata"]["name"]
        object_key = f"{self.prefix}{name}/{self.object_name}"
        existing = self._store.get(object_key)
        try:
            if existing is None:
                self._api.create("", self.plural, name, self.desired())
            elif (fixed := self.drifted(existing)) is not None:
                self._api.update(object_key, fixed)
        except ApiError as err:
            if err.code not in (
                403,
                404,
                409,
            ):  # the namespace began terminating or went; someone wrote first
                raise
        return None
