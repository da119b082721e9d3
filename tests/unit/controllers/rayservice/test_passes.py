"""RayService passes through the fake API server (`fakekube`): what each pass writes, in milliseconds, as
upstream's fake-client tests check its reconciler. The same flows against localkube and its clock are in
tests/integration/rayservice."""

from __future__ import annotations

import copy
from typing import Any

from kuberay.api.features import Feature, FeatureGates
from kuberay.controllers.rayservice.context import GATEWAY, HTTP_ROUTE
from kuberay.rayresources import RAYSERVICE
from kuberay.runtime.resources import SERVICE
from unit.controllers.rayservice.world import NS, World, rayservice, worker_group


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions") or () if c["type"] == kind)


def active(world: World) -> str:
    return str(world.status().get("activeServiceStatus", {}).get("rayClusterName") or "")


def pending(world: World) -> str:
    return str(world.status().get("pendingServiceStatus", {}).get("rayClusterName") or "")


def change_spec(world: World, change: Any) -> None:
    obj = world.service()
    change(obj["spec"])
    world.kube.put(RAYSERVICE, obj)


def set_head_env(spec: dict[str, Any], value: str) -> None:
    container = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "TAG", "value": value}]


async def serving(world: World, **spec: Any) -> str:
    """Passes until the RayService's first cluster serves; its name."""
    world.kube.put(RAYSERVICE, rayservice(**spec))
    await world.reconcile()  # the finalizer
    await world.reconcile()  # the pending cluster's name
    await world.reconcile()  # the pending cluster
    [name] = world.clusters()
    world.bring_up(name)
    await world.reconcile()  # Serve submitted
    await world.reconcile()  # Serve running: the Services, promoted
    return name


async def test_a_new_service_gets_a_cluster_which_is_promoted_once_it_serves() -> None:
    world = World()
    world.kube.put(RAYSERVICE, rayservice())
    await world.reconcile()
    assert world.service()["metadata"]["finalizers"] == ["ray.io/rayservice-finalizer"]
    await world.reconcile()
    assert world.status()["observedGeneration"] == 1
    name = pending(world)
    assert name.startswith("svc-") and not active(world)
    assert condition(world.status(), "Ready")["reason"] == "Initializing"
    await world.reconcile()
    cluster = world.clusters()[name]
    assert cluster["metadata"]["ownerReferences"][0]["name"] == "svc"
    assert cluster["metadata"]["annotations"]["ray.io/num-worker-groups"] == "1"

    world.bring_up(name)
    await world.reconcile()
    assert [a["name"] for a in world.serve.configs[name][-1]["applications"]] == ["fruit_app"]
    assert not active(world)  # readiness is read before the submission: it serves on the next pass
    await world.reconcile()
    assert active(world) == name and not pending(world)
    services = world.kube.objects(SERVICE)
    assert services["svc-serve-svc"]["spec"]["selector"]["ray.io/cluster"] == name
    assert services["svc-head-svc"]["spec"]["selector"]["ray.io/cluster"] == name
    assert world.status()["activeServiceStatus"]["applicationStatuses"]["fruit_app"]["status"] == "RUNNING"
    assert condition(world.status(), "Ready")["status"] == "False"  # no serve endpoint yet

    world.endpoints("svc-serve-svc", ready=2)
    await world.reconcile()
    assert world.status()["numServeEndpoints"] == 2
    assert condition(world.status(), "Ready")["status"] == "True"
    assert world.status()["serviceStatus"] == "Running"
    assert {"CreatedRayCluster", "UpdatedServeApplications", "CreatedService"} <= set(world.events.reasons())


async def test_a_cluster_change_makes_a_pending_cluster_promoted_once_it_serves_then_the_old_one_goes() -> (
    None
):
    world = World()
    first = await serving(world, rayClusterDeletionDelaySeconds=5)
    change_spec(world, lambda spec: set_head_env(spec, "v2"))
    await world.reconcile()
    second = pending(world)
    assert second and second != first and active(world) == first
    assert world.status()["observedGeneration"] == 2
    assert condition(world.status(), "UpgradeInProgress")["status"] == "True"
    await world.reconcile()
    assert set(world.clusters()) == {first, second}
    env = world.clusters()[second]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "TAG", "value": "v2"}]

    world.bring_up(second)
    await world.reconcile()
    assert active(world) == first  # the first read finds no application; the config is submitted
    await world.reconcile()
    assert active(world) == second and not pending(world)
    assert world.kube.objects(SERVICE)["svc-serve-svc"]["spec"]["selector"]["ray.io/cluster"] == second
    assert condition(world.status(), "UpgradeInProgress")["reason"] == "NoPendingCluster"

    await world.reconcile()  # the old cluster is dangling: its deletion delay starts
    assert first in world.clusters()
    world.clock.advance(6)
    await world.reconcile()
    assert set(world.clusters()) == {second}
    assert "DeletedRayCluster" in world.events.reasons()


async def test_a_worker_group_added_to_a_spec_without_any_updates_the_cluster_in_place() -> None:
    for no_groups in ({"workerGroupSpecs": []}, {}):
        world = World()
        service = rayservice()
        service["spec"]["rayClusterConfig"].pop("workerGroupSpecs")
        service["spec"]["rayClusterConfig"].update(copy.deepcopy(no_groups))
        world.kube.put(RAYSERVICE, service)
        for _ in range(3):
            await world.reconcile()
        [first] = world.clusters()
        world.bring_up(first)
        await world.reconcile()
        await world.reconcile()
        assert active(world) == first

        change_spec(
            world, lambda spec: spec["rayClusterConfig"].update(workerGroupSpecs=[worker_group("small")])
        )
        await world.reconcile()
        assert list(world.clusters()) == [first] and not pending(world), no_groups
        groups = world.clusters()[first]["spec"]["workerGroupSpecs"]
        assert [g["groupName"] for g in groups] == ["small"]
        assert "UpdatedRayCluster" in world.events.reasons()


async def test_suspend_deletes_the_clusters_and_services_then_resume_starts_over() -> None:
    world = World()
    first = await serving(world)
    change_spec(world, lambda spec: spec.update(suspend=True))
    await world.reconcile()
    assert condition(world.status(), "Suspending")["status"] == "True"
    assert world.status()["activeServiceStatus"] == {} and world.status()["serviceStatus"] == ""
    assert first in world.clusters()  # the deletes start on the next pass

    await world.reconcile()
    assert world.clusters() == {}
    assert not {"svc-head-svc", "svc-serve-svc"} & set(world.kube.objects(SERVICE))
    assert condition(world.status(), "Suspending")["reason"] == "SuspendInProgress"
    await world.reconcile()
    assert condition(world.status(), "Suspended")["status"] == "True"
    assert condition(world.status(), "Suspending")["status"] == "False"
    assert world.events.reasons().count("DeletedRayCluster") == 1
    writes = len(world.kube.writes)
    await world.reconcile()
    assert len(world.kube.writes) == writes  # suspended and still wanted: nothing to do

    change_spec(world, lambda spec: spec.update(suspend=False))
    await world.reconcile()
    assert condition(world.status(), "Suspended")["status"] == "False"
    assert condition(world.status(), "Ready")["reason"] == "Initializing"
    second = pending(world)
    await world.reconcile()
    assert set(world.clusters()) == {second} and second != first


def _accept(world: World) -> None:
    """What a Gateway implementation would write: the Gateway and the route accepted."""
    accepted = [{"type": t, "status": "True"} for t in ("Accepted", "Programmed", "ResolvedRefs")]
    gateway = world.kube.objects(GATEWAY)["inc-gateway"]
    world.kube.put(GATEWAY, {**gateway, "status": {"conditions": accepted}})
    route = world.kube.objects(HTTP_ROUTE)["inc-httproute"]
    parent = {"parentRef": {"name": "inc-gateway", "namespace": NS}, "conditions": accepted}
    world.kube.put(HTTP_ROUTE, {**route, "status": {"parents": [parent]}})


def _weights(world: World) -> dict[str, int]:
    route = world.kube.objects(HTTP_ROUTE)["inc-httproute"]
    return {b["name"]: b["weight"] for b in route["spec"]["rules"][0]["backendRefs"]}


async def test_an_incremental_upgrade_moves_capacity_and_traffic_through_the_gateway_in_steps() -> None:
    world = World(FeatureGates({Feature.RAY_SERVICE_INCREMENTAL_UPGRADE: True}))
    options = {
        "maxSurgePercent": 50,
        "stepSizePercent": 25,
        "intervalSeconds": 10,
        "gatewayClassName": "istio",
    }
    strategy = {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": options}
    service = rayservice("inc", upgradeStrategy=strategy)
    service["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    world.kube.put(RAYSERVICE, service)
    for _ in range(3):
        await world.reconcile("inc")
    [first] = world.clusters()
    world.bring_up(first)
    await world.reconcile("inc")
    await world.reconcile("inc")
    assert world.status("inc")["activeServiceStatus"]["rayClusterName"] == first
    assert world.kube.objects(GATEWAY)["inc-gateway"]["spec"]["gatewayClassName"] == "istio"
    await world.reconcile("inc")
    assert _weights(world) == {f"{first}-serve-svc": 100}
    assert (
        world.kube.objects(SERVICE)[f"{first}-serve-svc"]["metadata"]["ownerReferences"][0]["name"] == first
    )
    _accept(world)

    obj = world.service("inc")
    set_head_env(obj["spec"], "v2")
    world.kube.put(RAYSERVICE, obj)
    await world.reconcile("inc")
    second = world.status("inc")["pendingServiceStatus"]["rayClusterName"]
    assert world.status("inc")["pendingServiceStatus"]["targetCapacity"] == 0
    await world.reconcile("inc")
    assert (
        "replicas" not in world.clusters()[second]["spec"]["workerGroupSpecs"][0]
    )  # the autoscaler grows it
    world.bring_up(second)

    seen: list[int] = []
    for _ in range(40):
        await world.reconcile("inc")
        _accept(world)
        weight = _weights(world).get(f"{second}-serve-svc")
        if weight is not None and (not seen or seen[-1] != weight):
            assert sum(_weights(world).values()) == 100
            seen.append(weight)
        if world.status("inc")["activeServiceStatus"]["rayClusterName"] == second:
            break
        world.clock.advance(10)
    assert world.status("inc")["activeServiceStatus"]["rayClusterName"] == second
    assert seen == [0, 25, 50, 75, 100]
    capacities = [c.get("target_capacity") for c in world.serve.configs[second] if "target_capacity" in c]
    assert capacities[-1] == 100
    old = [c.get("target_capacity") for c in world.serve.configs[first] if "target_capacity" in c]
    assert old[-1] == 0
    assert "UpdatedServeTargetCapacity" in world.events.reasons()
