"""The desired resources of a RayCluster (`desiredCPU`, `desiredMemory`, `desiredGPU`, `desiredTPU`): sums of
the pod templates' requests (else limits), in Go's canonical quantity text (`kubesemantics.quantity`).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kuberay.builders.raystart import is_gpu_resource_key
from kuberay.controllers.raycluster import replicas
from kubesemantics import quantity

Obj = Mapping[str, Any]

TPU_RESOURCE = "google.com/tpu"


def _pod_resources(pod_spec: Obj) -> dict[str, quantity.Amount]:
    total: dict[str, quantity.Amount] = {}
    for container in pod_spec.get("containers") or ():
        resources = container.get("resources") or {}
        quantity.add(total, {**(resources.get("limits") or {}), **(resources.get("requests") or {})})
    return total


def desired_resources(spec: Obj) -> dict[str, str]:
    """`desiredCPU`, `desiredMemory`, `desiredGPU` and `desiredTPU`: the head pod plus every non-suspended
    group's pod × `numOfHosts` × raw `replicas`."""
    head = (spec.get("headGroupSpec") or {}).get("template") or {}
    total = _pod_resources(head.get("spec") or {})
    for group in replicas.worker_groups(spec):
        if group.get("suspend") is True:
            continue
        factor = replicas.as_int(group.get("numOfHosts"), 1) * replicas.as_int(group.get("replicas"), 0)
        quantity.add(total, _pod_resources((group.get("template") or {}).get("spec") or {}), factor)

    def text(name: str) -> str:
        amount = total.get(name)
        return amount.text() if amount else "0"

    # upstream `sumGPUs`: every GPU resource name, the one `ray start`'s `num-gpus` reads (MIG slices too).
    gpus = [a for n, a in total.items() if is_gpu_resource_key(n) and a.value != 0]
    gpu = quantity.canonical(sum((a.value for a in gpus), Fraction(0)), gpus[0].binary) if gpus else "0"
    return {
        "desiredCPU": text("cpu"),
        "desiredMemory": text("memory"),
        "desiredGPU": gpu,
        "desiredTPU": text(TPU_RESOURCE),
    }
