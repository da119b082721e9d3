"""`kubectl ray scale cluster`: a worker group's replicas, minReplicas and maxReplicas, checked as given and
again on the merged result (an unset minimum is 0, an unset maximum 2147483647), written by one PUT only
when something changes, with upstream's messages."""

from __future__ import annotations

from kuberay.kubectl.kube import Kube, PluginError, describe
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime import errors

UNSET = -1
MAX_INT32 = 2147483647


def validate(group: str, replicas: int, min_replicas: int, max_replicas: int) -> None:
    if not group:
        raise PluginError("must specify -w/--worker-group")
    if UNSET == replicas == min_replicas == max_replicas:
        raise PluginError(
            "must specify at least one of --replicas, --min-replicas, or --max-replicas (non-negative integers)"
        )
    for flag, value in (
        ("--min-replicas", min_replicas),
        ("--max-replicas", max_replicas),
        ("--replicas", replicas),
    ):
        if value != UNSET and value < 0:
            raise PluginError(f"{flag} must be a non-negative integer")
    if UNSET not in (min_replicas, max_replicas) and min_replicas > max_replicas:
        raise PluginError(
            f"--min-replicas ({min_replicas}) cannot be greater than --max-replicas ({max_replicas})"
        )
    if replicas != UNSET:
        if min_replicas != UNSET and replicas < min_replicas:
            raise PluginError(f"--replicas ({replicas}) cannot be less than --min-replicas ({min_replicas})")
        if max_replicas != UNSET and replicas > max_replicas:
            raise PluginError(
                f"--replicas ({replicas}) cannot be greater than --max-replicas ({max_replicas})"
            )


async def cluster(
    kube: Kube, name: str, group: str, replicas: int, min_replicas: int, max_replicas: int
) -> str:
    where = f"in Ray cluster {name} in namespace {kube.namespace}"
    try:
        rc = await kube.client.get(RAYCLUSTER, name, kube.namespace)
    except errors.KubeError as e:
        raise PluginError(f"failed to scale worker group {group} {where}: {describe(e, RAYCLUSTER)}") from e
    groups = rc["spec"].get("workerGroupSpecs") or []
    spec = next((g for g in groups if g.get("groupName") == group), None)
    if spec is None:
        available = ", ".join(g.get("groupName", "") for g in groups)
        raise PluginError(f"worker group {group} not found {where}. Available worker groups: {available}")
    current = {
        "minReplicas": spec.get("minReplicas", 0),
        "maxReplicas": spec.get("maxReplicas", MAX_INT32),
        "replicas": spec.get("replicas", 0),
    }
    final = dict(current)
    changes = []
    for field, label, wanted in (("minReplicas", "minReplicas", min_replicas),
                                 ("maxReplicas", "maxReplicas", max_replicas),
                                 ("replicas", "Replicas", replicas)):  # fmt: skip
        if wanted >= 0 and wanted != current[field]:
            final[field] = spec[field] = wanted
            changes.append(f"Scaled {label}: {current[field]} to {wanted}")
        elif wanted >= 0:
            final[field] = wanted
    if final["minReplicas"] > final["maxReplicas"]:
        raise PluginError(
            f"cannot set --min-replicas ({final['minReplicas']}) greater than --max-replicas ({final['maxReplicas']})"
        )
    if final["replicas"] < final["minReplicas"]:
        raise PluginError(
            f"cannot set --replicas ({final['replicas']}) less than --min-replicas ({final['minReplicas']})"
        )
    if final["replicas"] > final["maxReplicas"]:
        raise PluginError(
            f"cannot set --replicas ({final['replicas']}) greater than --max-replicas ({final['maxReplicas']})"
        )
    if not changes:
        return f"Worker group {group} {where} already matches the requested configuration. Skipping.\n"
    try:
        await kube.client.update(RAYCLUSTER, rc)
    except errors.KubeError as e:
        raise PluginError(f"failed to update worker group {group} {where}: {describe(e)}") from e
    return f"Updated worker group {group} {where} ({', '.join(changes)})\n"
