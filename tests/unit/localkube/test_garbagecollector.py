import asyncio
from typing import Any

from localkube.server.rest import Resources
from support.eventually import eventually


def _type(cluster: Resources, plural: str) -> Any:
    return cluster.registry.by_resource("", plural)


def _make(
    cluster: Resources, name: str, owner: dict[str, Any] | None = None, block: bool = False, **meta: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **meta}
    if owner is not None:
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
        }
        metadata["ownerReferences"] = [{**ref, "blockOwnerDeletion": True} if block else ref]
    return cluster.create(_type(cluster, "configmaps"), "default", {"metadata": metadata}, {})


def _exists(cluster: Resources, name: str) -> bool:
    return cluster.store.get(f"/registry/core/configmaps/default/{name}") is not None


async def _until(predicate: Any) -> None:
    await eventually(predicate, timeout=10, every=0.02)


def _delete(cluster: Resources, name: str, policy: str) -> None:
    cluster.delete(_type(cluster, "configmaps"), "default", name, {"propagationPolicy": policy}, {})


async def test_background_deletes_dependents_of_a_deleted_owner(cluster: Resources) -> None:
    owner = _make(cluster, "owner")
    _make(cluster, "child", owner)
    grandchild_owner = cluster.store.get("/registry/core/configmaps/default/child")
    _make(cluster, "grandchild", grandchild_owner)
    _delete(cluster, "owner", "Background")
    await _until(lambda: not _exists(cluster, "child") and not _exists(cluster, "grandchild"))


async def test_a_dependent_with_another_live_owner_only_loses_the_dangling_reference(
    cluster: Resources,
) -> None:
    first, second = _make(cluster, "first"), _make(cluster, "second")
    child = _make(cluster, "shared", first)
    child["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "second", "uid": second["metadata"]["uid"]}
    )
    cluster.update(_type(cluster, "configmaps"), "default", "shared", child, None, {})
    _delete(cluster, "first", "Background")

    def only_second() -> bool:
        obj = cluster.store.get("/registry/core/configmaps/default/shared")
        return obj is not None and [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["second"]

    await _until(only_second)


async def test_foreground_waits_for_blocking_dependents(cluster: Resources) -> None:
    owner = _make(cluster, "fg")
    _make(cluster, "held", owner, block=True, finalizers=["example.com/hold"])
    _delete(cluster, "fg", "Foreground")
    await _until(
        lambda: bool(
            cluster.store.get("/registry/core/configmaps/default/held")["metadata"].get("deletionTimestamp")
        )
    )  # type: ignore[index]
    await asyncio.sleep(0.1)
    assert _exists(cluster, "fg"), "the owner must wait for its blocking dependent"
    held = cluster.store.get("/registry/core/configmaps/default/held")
    assert held is not None
    held["metadata"]["finalizers"] = []
    cluster.update(_type(cluster, "configmaps"), "default", "held", held, None, {})
    await _until(lambda: not _exists(cluster, "fg") and not _exists(cluster, "held"))


async def test_orphan_keeps_dependents_without_the_reference(cluster: Resources) -> None:
    owner = _make(cluster, "parent")
    _make(cluster, "kept", owner)
    _delete(cluster, "parent", "Orphan")
    await _until(lambda: not _exists(cluster, "parent"))
    kept = cluster.store.get("/registry/core/configmaps/default/kept")
    assert kept is not None and "ownerReferences" not in kept["metadata"]
