"""The desired resources of a RayCluster (`desiredCPU`, `desiredMemory`, `desiredGPU`, `desiredTPU`): sums of
the pod templates' requests (else limits), in Go's canonical quantity text (`kubesemantics.quantity`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kuberay.builders.raystart import is_gpu_resource_key
from kuberay.controllers.raycluster import replicas
from kubesemantics import quantity

Obj = Mapping[str, Any]

TPU_RESOURCE = "google.com/tpu"


@dataclass
class _Amount:
    """A quantity being summed, with the format of its first term (as Go's `Quantity.Add` keeps)."""

    value: Fraction
    binary: bool


def _pod_resources(pod_spec: Obj) -> dict[str, _Amount]:
    total: dict[str, _Amount] = {}
    for container in pod_spec.get("containers") or ():
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in merged.items():
            amount = quantity.parse(value)
            if name in total:
                total[name].value += amount
            else:
                total[name] = _Amount(amount, quantity.is_binary(value))
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
        for name, amount in _pod_resources((group.get("template") or {}).get("spec") or {}).items():
            if name in total:
                total[name].value += amount.value * factor
            else:
                total[name] = _Amount(amount.value * factor, amount.binary)

    def text(name: str) -> str:
        amount = total.get(name)
        return quantity.canonical(amount.value, amount.binary) if amount else "0"

    # upstream `sumGPUs`: every GPU resource name, the one `ray start`'s `num-gpus` reads (MIG slices too).
    gpus = [a for n, a in total.items() if is_gpu_resource_key(n) and a.value != 0]
    gpu = quantity.canonical(sum((a.value for a in gpus), Fraction(0)), gpus[0].binary) if gpus else "0"
    return {
        "desiredCPU": text("cpu"),
        "desiredMemory": text("memory"),
        "desiredGPU": gpu,
        "desiredTPU": text(TPU_RESOURCE),
    }
