"""The namespace controller's last step for pods: a Terminating namespace goes once its last pod is gone.

The REST layer removes a Terminating namespace when a delete through it removes the namespace's last
object. A pod deleted with a grace period is removed later by its node's kubelet, which writes to the store
directly (a kubelet's privileged path), so nothing would look at the namespace again: it stayed Terminating
for ever once its last objects were such pods. This controller watches pod removals and looks.
"""

from __future__ import annotations

from collections.abc import Iterable

from localkube.controllers.api import ControllerApi
from localkube.node.kubelet import PODS_PREFIX
from localkube.storage import Event


class NamespaceFinalizer:
    name = "namespace-finalizer"
    prefixes = (PODS_PREFIX,)

    def __init__(self, api: ControllerApi) -> None:
        self._api = api

    def observe(self, event: Event) -> Iterable[str]:
        if event.type != "DELETED":
            return ()
        return (event.key.removeprefix(PODS_PREFIX).split("/", 1)[0],)

    def reconcile(self, key: str) -> float | None:
        self._api.finish_terminating_namespace(key)
        return None
