"""Owner references: how every object the operator makes points back at the ray.io object that owns it.

Upstream sets them with controller-runtime's `SetControllerReference` (or `metav1.NewControllerRef`), which
writes one reference with `controller: true` and `blockOwnerDeletion: true`; garbage collection and the
operator's owner-indexed caches rely on exactly that shape. Field order follows the Kubernetes JSON
(apiVersion, kind, name, uid, controller, blockOwnerDeletion) so built objects read like the API server's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuberay.api.meta import KubeObject


def controller_reference(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """The controller owner reference to the object `kind/name` (uid `uid`) of `api_version`."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_by(owner: KubeObject) -> list[dict[str, Any]]:
    """The `ownerReferences` of an object controlled by the ray.io object `owner`."""
    return [controller_reference(owner.api_version, owner.kind, owner.name, owner.metadata.uid or "")]


def controller_of(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference marked `controller: true` in an object's metadata, if any (Kubernetes allows at
    most one)."""
    for reference in metadata.get("ownerReferences") or ():
        if reference.get("controller") is True:
            return reference  # type: ignore[no-any-return]
    return None
