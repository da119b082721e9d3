"""The ServiceAccount controller: every namespace that is not terminating has a ServiceAccount named
`default`, made when the namespace appears and again if it is deleted, as on a real cluster (a pod that
names no ServiceAccount runs as it and gets its token)."""

from __future__ import annotations

from typing import Any

from localkube.controllers.namespaced import EveryNamespace

ACCOUNTS_PREFIX = "/registry/core/serviceaccounts/"
DEFAULT = "default"


class ServiceAccountController(EveryNamespace):
    name = "serviceaccount"
    plural = "serviceaccounts"
    object_name = DEFAULT
    prefix = ACCOUNTS_PREFIX

    def desired(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": self.object_name}}
