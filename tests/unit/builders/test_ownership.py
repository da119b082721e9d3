from kuberay.api.rayjob import RayJob
from kuberay.builders import ownership


def test_controller_reference_blocks_owner_deletion() -> None:
    ref = ownership.controller_reference("ray.io/v1", "RayCluster", "rc", "u-1")
    assert ref == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "rc",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_controller_of_picks_the_controller_reference() -> None:
    controller = ownership.controller_reference("ray.io/v1", "RayJob", "job", "u-2")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u-3"}
    assert ownership.controller_of({"ownerReferences": [other, controller]}) is controller
    assert ownership.controller_of({"ownerReferences": [other]}) is None
    assert ownership.controller_of({}) is None


def test_controlled_by_a_ray_object() -> None:
    job = RayJob.parse({"metadata": {"name": "job", "uid": "u-4"}})
    assert ownership.controlled_by(job) == [
        ownership.controller_reference("ray.io/v1", "RayJob", "job", "u-4")
    ]
