"""The root CA publisher: every namespace that is not terminating has the ConfigMap `kube-root-ca.crt`
holding the API server's CA certificate (`ca.crt`), as kube-controller-manager publishes it, so that pods
can verify the server at its internal address; one edited or deleted is put back."""

from __future__ import annotations

from typing import Any

from localkube.controllers.api import ControllerApi
from localkube.controllers.namespaced import EveryNamespace
from localkube.storage import Store

CONFIG_MAPS_PREFIX = "/registry/core/configmaps/"
NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as "
    "the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)


class RootCAPublisher(EveryNamespace):
    name = "root-ca-cert-publisher"
    plural = "configmaps"
    object_name = NAME
    prefix = CONFIG_MAPS_PREFIX

    def __init__(self, store: Store, api: ControllerApi, ca_cert: bytes) -> None:
        super().__init__(store, api)
        self._data = {"ca.crt": ca_cert.decode()}

    def desired(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.object_name, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": dict(self._data),
        }

    def drifted(self, existing: dict[str, Any]) -> dict[str, Any] | None:
        annotations = existing["metadata"].get("annotations") or {}
        if existing.get("data") == self._data and annotations.get(DESCRIPTION_ANNOTATION):
            return None
        fixed = {**existing, "data": dict(self._data)}
        fixed["metadata"] = {
            **existing["metadata"],
            "annotations": {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION},
        }
        return fixed
