"""The fake API server keeps the rules the controllers' unit tier relies on."""

from __future__ import annotations

import pytest

from kuberay.runtime import errors
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.resources import ObjectKey, Resource
from unit.controllers.fakekube import FakeClient

THING = Resource("example.com/v1", "Thing", "things")


def thing(**metadata: object) -> dict[str, object]:
    return {"metadata": {"name": "a", "namespace": "ns", **metadata}, "spec": {"size": 1}}


async def test_versions_conflicts_generation_and_the_status_subresource() -> None:
    kube = FakeClient(FakeClock())
    created = await kube.create(THING, thing())
    with pytest.raises(errors.AlreadyExistsError):
        await kube.create(THING, thing())
    stale = dict(created)
    updated = await kube.update(THING, {**created, "spec": {"size": 2}, "status": {"ignored": True}})
    assert updated["metadata"]["generation"] == 2 and "status" not in updated
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    with pytest.raises(errors.ConflictError):
        await kube.update(THING, stale)
    status = await kube.update_status(THING, {**updated, "spec": {"size": 9}, "status": {"ready": True}})
    assert status["spec"] == {"size": 2} and status["status"] == {"ready": True}
    assert status["metadata"]["generation"] == 2
    assert kube.store(THING).get(ObjectKey("ns", "a"))["status"]["ready"] is True  # type: ignore[index]


async def test_a_finalizer_holds_a_deleted_object_until_it_is_removed() -> None:
    kube = FakeClient(FakeClock())
    await kube.create(THING, thing(finalizers=["example.com/keep"]))
    await kube.delete(THING, "a", "ns")
    held = await kube.get(THING, "a", "ns")
    assert held["metadata"]["deletionTimestamp"]
    await kube.update(THING, {**held, "metadata": {**held["metadata"], "finalizers": []}})
    with pytest.raises(errors.NotFoundError):
        await kube.get(THING, "a", "ns")
    assert kube.store(THING).get(ObjectKey("ns", "a")) is None
