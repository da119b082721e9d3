"""The operator's side of in-tree autoscaling (simulate mode; the test sends the JSON patches Ray's
autoscaler sends, and tests/e2e/test_autoscaler.py has Ray's own autoscaler close the loop): `replicas`
clamped to [minReplicas, maxReplicas], `workersToDelete` deleting exactly the named pods and never cleared
by the operator, no random deletion of surplus pods while autoscaling is on (the module's operator runs
without ENABLE_RANDOM_POD_DELETE; test_autoscaling_random_delete.py sets it), and one `ScaledWorkerGroup`
Event per scale decision saying which pods and why.
"""

from __future__ import annotations

from typing import Any

from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.client import PatchType
from support.eventually import eventually

from .conftest import Kube
from .test_lifecycle import WORKER, names, small_cluster, wait_ready_with


def autoscaling_cluster(name: str, replicas: int) -> dict[str, Any]:
    cluster = small_cluster(name, replicas=replicas, enableInTreeAutoscaling=True)
    cluster["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 5
    return cluster


async def scale_events(kube: Kube, name: str, decisions: int) -> list[str]:
    """The cluster's `ScaledWorkerGroup` messages, once there are `decisions` of them: Events are sent in
    the background, so the pods they tell of can be ready before they are written."""
    messages: list[str] = []

    async def written() -> bool:
        messages[:] = [e["message"] for e in await kube.events(name) if e["reason"] == "ScaledWorkerGroup"]
        return len(messages) >= decisions

    await eventually(written)
    return messages


async def replace_in_group(kube: Kube, name: str, **fields: Any) -> None:
    """The JSON patch Ray's autoscaler sends: `replace` of fields of worker group 0."""
    patch = [
        {"op": "replace", "path": f"/spec/workerGroupSpecs/0/{k}", "value": v} for k, v in fields.items()
    ]
    await kube.client.patch(RAYCLUSTER, name, patch, kube.namespace, patch_type=PatchType.JSON)


async def reconciled_with(kube: Kube, name: str, desired: int) -> None:
    """Waits until the status counts `desired` workers: the pass that wrote it has run its pods step."""

    async def seen() -> bool:
        return (await kube.cluster(name)).get("status", {}).get("desiredWorkerReplicas", 0) == desired

    await eventually(seen)


async def test_autoscaler_patches_are_carried_out_and_explained(kube: Kube) -> None:
    await kube.create_cluster(autoscaling_cluster("auto", replicas=3))
    first = names(await wait_ready_with(kube, "auto", 3))
    assert await scale_events(kube, "auto", 1) == [
        f"Worker group small: created 3 Pod(s) [{' '.join(sorted(first))}]: 0 running, 3 wanted (replicas 3)"
    ]

    # Fewer replicas without names: the autoscaler decides which pods go, so none does.
    await replace_in_group(kube, "auto", replicas=1)
    await reconciled_with(kube, "auto", 1)
    assert names(await kube.live_pods("auto", **WORKER)) == first

    doomed = sorted(first)[:2]
    await replace_in_group(kube, "auto", scaleStrategy={"workersToDelete": doomed})
    assert names(await wait_ready_with(kube, "auto", 1)) == first - set(doomed)
    group = (await kube.cluster("auto"))["spec"]["workerGroupSpecs"][0]
    assert group["scaleStrategy"]["workersToDelete"] == doomed  # the autoscaler clears it, not the operator
    assert (await scale_events(kube, "auto", 2))[-1] == (
        f"Worker group small: deleted 2 Pod(s) [{' '.join(doomed)}]: named in scaleStrategy.workersToDelete"
    )

    # Above maxReplicas: clamped, and the Event says so.
    await replace_in_group(kube, "auto", replicas=9, scaleStrategy={"workersToDelete": []})
    now = names(await wait_ready_with(kube, "auto", 5))
    made = sorted(now - first)
    assert len(made) == 4
    assert (await scale_events(kube, "auto", 3))[-1] == (
        f"Worker group small: created 4 Pod(s) [{' '.join(made)}]: "
        "1 running, 5 wanted (replicas 9 above maxReplicas 5)"
    )
