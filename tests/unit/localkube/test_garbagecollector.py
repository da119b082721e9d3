import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from localkube.controllers.api import ControllerApi
from localkube.controllers.garbagecollector import GarbageCollector
from localkube.controllers.runner import Runner
from localkube.server.registry import Registry
from localkube.server.rest import SYSTEM_NAMESPACES, Resources
from localkube.storage import Store


@pytest.fixture
async def resources(tmp_path: Path) -> AsyncIterator[Resources]:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    runner = Runner(store, [GarbageCollector(store, ControllerApi(resources))])
    await runner.start()
    yield resources
    await runner.stop()
    store.close()


def _type(resources: Resources, plural: str) -> Any:
    return resources.registry.by_resource("", plural)


def _make(
    resources: Resources, name: str, owner: dict[str, Any] | None = None, block: bool = False, **meta: Any
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
    return resources.create(_type(resources, "configmaps"), "default", {"metadata": metadata}, {})


def _exists(resources: Resources, name: str) -> bool:
    return resources.store.get(f"/registry/core/configmaps/default/{name}") is not None


async def _until(predicate: Any) -> None:
    async with asyncio.timeout(10):
        while not predicate():
            await asyncio.sleep(0.02)


def _delete(resources: Resources, name: str, policy: str) -> None:
    resources.delete(_type(resources, "configmaps"), "default", name, {"propagationPolicy": policy}, {})


async def test_background_deletes_dependents_of_a_deleted_owner(resources: Resources) -> None:
    owner = _make(resources, "owner")
    _make(resources, "child", owner)
    grandchild_owner = resources.store.get("/registry/core/configmaps/default/child")
    _make(resources, "grandchild", grandchild_owner)
    _delete(resources, "owner", "Background")
    await _until(lambda: not _exists(resources, "child") and not _exists(resources, "grandchild"))


async def test_a_dependent_with_another_live_owner_only_loses_the_dangling_reference(
    resources: Resources,
) -> None:
    first, second = _make(resources, "first"), _make(resources, "second")
    child = _make(resources, "shared", first)
    child["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "second", "uid": second["metadata"]["uid"]}
    )
    resources.update(_type(resources, "configmaps"), "default", "shared", child, None, {})
    _delete(resources, "first", "Background")

    def only_second() -> bool:
        obj = resources.store.get("/registry/core/configmaps/default/shared")
        return obj is not None and [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["second"]

    await _until(only_second)


async def test_foreground_waits_for_blocking_dependents(resources: Resources) -> None:
    owner = _make(resources, "fg")
    _make(resources, "held", owner, block=True, finalizers=["example.com/hold"])
    _delete(resources, "fg", "Foreground")
    await _until(
        lambda: bool(
            resources.store.get("/registry/core/configmaps/default/held")["metadata"].get("deletionTimestamp")
        )
    )  # type: ignore[index]
    await asyncio.sleep(0.1)
    assert _exists(resources, "fg"), "the owner must wait for its blocking dependent"
    held = resources.store.get("/registry/core/configmaps/default/held")
    assert held is not None
    held["metadata"]["finalizers"] = []
    resources.update(_type(resources, "configmaps"), "default", "held", held, None, {})
    await _until(lambda: not _exists(resources, "fg") and not _exists(resources, "held"))


async def test_orphan_keeps_dependents_without_the_reference(resources: Resources) -> None:
    owner = _make(resources, "parent")
    _make(resources, "kept", owner)
    _delete(resources, "parent", "Orphan")
    await _until(lambda: not _exists(resources, "parent"))
    kept = resources.store.get("/registry/core/configmaps/default/kept")
    assert kept is not None and "ownerReferences" not in kept["metadata"]
