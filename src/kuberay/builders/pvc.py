"""The PersistentVolumeClaim behind the embedded (RocksDB) GCS store of a RayCluster.

Made only for `gcsFaultToleranceOptions.backend: rocksdb` without a user `storage.claimName` (a user's
claim is never created or owned). Upstream (`common/gcs_ft.go`): `<cluster>-gcs-pvc`, access modes
`storage.accessModes` or `[ReadWriteOnce]`, size `storage.size` or `1Gi`, the storage class only when
given (unset means the cluster's default class). With `deletionPolicy: Retain` the claim gets no owner
reference, so its data outlives the cluster and a same-named cluster adopts it; otherwise the RayCluster
controls it. A live claim cannot be reconfigured in place: `drift` names what differs so the operator can
say so in an event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from kuberay.api import constants
from kuberay.api.raycluster import RayCluster
from kuberay.builders import ownership
from kubesemantics import quantity

DEFAULT_ACCESS_MODES = ("ReadWriteOnce",)
RETAIN = "Retain"


def needs_managed_pvc(cluster: RayCluster) -> bool:
    """Whether the operator manages a GCS storage PVC for `cluster` (embedded backend, no claimName)."""
    options = cluster.spec.gcs_fault_tolerance_options
    if options is None or options.backend != constants.GCS_STORAGE_ROCKSDB_VALUE:
        return False
    return not (options.storage and options.storage.claim_name)


def is_retained(cluster: RayCluster) -> bool:
    """`deletionPolicy: Retain`: the claim must carry no controller reference to the cluster."""
    options = cluster.spec.gcs_fault_tolerance_options
    storage = options.storage if options else None
    return storage is not None and storage.deletion_policy == RETAIN


def build_gcs_pvc(cluster: RayCluster) -> dict[str, Any]:
    """The operator-managed GCS storage PVC of `cluster` (owned by it unless retained)."""
    options = cluster.spec.gcs_fault_tolerance_options
    storage = options.storage if options else None
    spec: dict[str, Any] = {
        "accessModes": list(
            storage.access_modes if storage and storage.access_modes else DEFAULT_ACCESS_MODES
        ),
        "resources": {
            "requests": {
                "storage": (storage.size if storage and storage.size else constants.GCS_STORAGE_DEFAULT_SIZE)
            }
        },
    }
    if storage and storage.storage_class_name is not None:
        spec["storageClassName"] = storage.storage_class_name
    metadata: dict[str, Any] = {
        "name": cluster.name + constants.GCS_STORAGE_PVC_SUFFIX,
        "namespace": cluster.namespace,
        "labels": {constants.RAY_CLUSTER_LABEL: cluster.name},
    }
    if not is_retained(cluster):
        metadata["ownerReferences"] = ownership.controlled_by(cluster)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def drift(desired: Mapping[str, Any], existing: Mapping[str, Any]) -> str:
    """What differs between the desired and the live claim in fields Kubernetes cannot change in place
    (size, storage class when one is asked for, access modes as a multiset), joined by "; "; empty when
    nothing does."""
    want, have = desired.get("spec") or {}, existing.get("spec") or {}
    differences = []
    want_size = ((want.get("resources") or {}).get("requests") or {}).get("storage", "0")
    have_size = ((have.get("resources") or {}).get("requests") or {}).get("storage", "0")
    if quantity.parse(want_size) != quantity.parse(have_size):
        differences.append(f"requested size {want_size} != current {have_size}")
    want_class = want.get("storageClassName")
    if want_class is not None and want_class != have.get("storageClassName"):
        have_class = have.get("storageClassName") or "<default>"
        differences.append(f"storageClassName {want_class} != current {have_class}")
    want_modes, have_modes = want.get("accessModes") or [], have.get("accessModes") or []
    if Counter(want_modes) != Counter(have_modes):
        differences.append(f"accessModes [{' '.join(want_modes)}] != current [{' '.join(have_modes)}]")
    return "; ".join(differences)
