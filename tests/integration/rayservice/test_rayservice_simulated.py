"""The RayService controller on localkube in simulate mode, with a Serve stand-in on each simulated head
(see harness.py): the upstream samples, the NewCluster upgrade and its Service switch, in-place Serve
updates, a failing application, validation, suspend and deletion."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from integration.rayservice.harness import (
    Operator,
    ServeStandIn,
    install_gateway_api,
    operator,
    replace_spec,
    set_env,
    start_standin,
)
from kuberay.rayresources import RAYCLUSTER, RAYSERVICE
from kuberay.runtime.resources import POD, SERVICE, Resource

# Slow: its upgrades and timeouts wait on the controller's requeue periods (~80 s).
# Marked so, it starts early, and its waiting overlaps the files that keep the cores busy.
pytestmark = [pytest.mark.slow, pytest.mark.timers]

SAMPLES = Path(__file__).resolve().parents[3] / ".." / "shared" / "upstream-samples"
SUPPORTING = {
    "ConfigMap": Resource("v1", "ConfigMap", "configmaps"),
    "Secret": Resource("v1", "Secret", "secrets"),
}
# Pools the simulated node does not have (GPU / TPU node selectors): their pods stay Pending, as they would
# on a cluster without such nodes, so only the RayCluster is checked.
UNSCHEDULABLE = {"ray-service.high-throughput-gemma4.yaml", "ray-service.high-throughput-llm.yaml",
                 "ray-service.tpu-single-host.yaml"}  # fmt: skip


def sample_files() -> list[str]:
    return sorted(p.name for p in SAMPLES.glob("ray-service*.yaml"))


def load(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((SAMPLES / name).read_text()) if doc]


def the_service(name: str) -> dict[str, Any]:
    (service,) = [d for d in load(name) if d["kind"] == "RayService"]
    return service


async def standin_for(service: dict[str, Any], failing: dict[str, str] | None = None) -> ServeStandIn:
    return await start_standin(service["spec"], failing)


def owner_of(obj: dict[str, Any]) -> tuple[str, str, bool]:
    (ref,) = obj["metadata"]["ownerReferences"]
    return ref["kind"], ref["name"], ref["controller"]


def incremental(service: dict[str, Any]) -> bool:
    return (service["spec"].get("upgradeStrategy") or {}).get("type") == "NewClusterWithIncrementalUpgrade"


@pytest.fixture(scope="module")
async def sample_outcomes(localkube: Any) -> dict[str, BaseException | None]:
    """Every sample applied at once, each in a namespace of its own, under one operator, and checked: what
    each check raised (None when it passed). Run one after another, each sample spent ~5 s waiting on the
    controller's requeue periods with the machine idle."""
    samples = sample_files()
    if any(incremental(the_service(sample)) for sample in samples):
        install_gateway_api(localkube)
    # Five workers, as an operator serving this many RayServices would be run (--reconcile-concurrency): with
    # upstream's default of one, each of ~15 services waits its turn behind all the others, and on a loaded
    # machine (passes of 1-4 s) a service's next pass came 10-30 s after its last, past the promotion wait.
    async with operator(localkube, namespaces=len(samples), reconcile_concurrency=5) as op:
        outcomes = await asyncio.gather(
            *(
                _apply_and_check(op, sample, namespace)
                for sample, namespace in zip(samples, op.namespaces, strict=True)
            ),
            return_exceptions=True,
        )
    return {s: o if isinstance(o, BaseException) else None for s, o in zip(samples, outcomes, strict=True)}


@pytest.mark.parametrize("sample", sample_files())
async def test_every_upstream_sample_makes_its_cluster_and_services(
    sample_outcomes: dict[str, BaseException | None], sample: str
) -> None:
    failure = sample_outcomes[sample]
    if failure is not None:
        raise failure


async def _apply_and_check(op: Operator, sample: str, namespace: str) -> None:
    for doc in load(sample):
        if doc["kind"] in SUPPORTING:
            doc["metadata"]["namespace"] = namespace
            await op.client.create(SUPPORTING[doc["kind"]], doc)
    service = the_service(sample)
    service["metadata"]["namespace"] = namespace
    standin = await standin_for(service)
    try:
        await op.client.create(RAYSERVICE, service)  # admission: the CRD schema accepts it
        await _check_sample(op, sample, namespace)
    finally:
        await standin.stop()


async def _check_sample(op: Operator, sample: str, namespace: str) -> None:
    service = the_service(sample)
    svc_name = service["metadata"]["name"]
    clusters = await op.wait(lambda: op.clusters(svc_name, namespace), 60, f"{sample}: a RayCluster")
    (cluster,) = clusters
    meta = cluster["metadata"]
    assert meta["name"].startswith(svc_name + "-") and len(meta["name"]) == len(svc_name) + 6, sample
    assert meta["labels"]["ray.io/originated-from-crd"] == "RayService"
    assert meta["labels"]["ray.io/originated-from-cr-name"] == svc_name
    assert meta["annotations"]["ray.io/num-worker-groups"] == str(
        len(service["spec"]["rayClusterConfig"].get("workerGroupSpecs") or [])
    )
    assert meta["annotations"]["ray.io/kuberay-version"]
    assert meta["annotations"]["ray.io/hash-without-replicas-and-workers-to-delete"]
    assert owner_of(cluster) == ("RayService", svc_name, True)
    if sample in UNSCHEDULABLE:
        return
    await op.wait_condition(svc_name, "Ready", "True", timeout=120, namespace=namespace)
    try:
        ready = await op.wait(
            lambda: _active_is(op, svc_name, namespace, meta["name"]), 30, f"{sample}: promoted"
        )
    except AssertionError as e:  # the status says which side was waiting on what
        found = await op.rayservice(svc_name, namespace)
        raise AssertionError(f"{e}; status: {(found or {}).get('status')}") from e
    status = ready["status"]
    assert status["activeServiceStatus"]["rayClusterName"] == meta["name"], sample
    assert status["serviceStatus"] == "Running" and status["numServeEndpoints"] >= 1
    head = await op.get(SERVICE, f"{svc_name}-head-svc", namespace)
    assert head is not None, sample
    assert head["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": svc_name,
        "ray.io/originated-from-crd": "RayService",
        "ray.io/node-type": "head",
        "ray.io/identifier": f"{svc_name}-head",
    }
    assert head["spec"]["selector"]["ray.io/cluster"] == meta["name"]
    assert owner_of(head) == ("RayService", svc_name, True)
    if incremental(service):
        serve_name = f"{meta['name']}-serve-svc"
    else:
        custom = (service["spec"].get("serveService") or {}).get("metadata", {}).get("name")
        serve_name = custom or f"{svc_name}-serve-svc"
    serve = await op.wait(lambda: op.get(SERVICE, serve_name, namespace), 30, f"{sample}: {serve_name}")
    assert serve["spec"]["selector"] == {"ray.io/cluster": meta["name"], "ray.io/serve": "true"}
    if not incremental(service):
        assert serve["metadata"]["labels"]["ray.io/serve"] == f"{svc_name}-serve"
        assert owner_of(serve) == ("RayService", svc_name, True)
    heads = (
        await op.client.list(
            POD, namespace, label_selector=f"ray.io/cluster={meta['name']},ray.io/node-type=head"
        )
    ).items
    assert [p["metadata"]["labels"]["ray.io/serve"] for p in heads] == ["true"]


def small_service(namespace: str, name: str = "svc", **spec: Any) -> dict[str, Any]:
    """The upstream sample with one worker and a one-application config (fast to simulate)."""
    service = the_service("ray-service.sample.yaml")
    service["metadata"] = {"name": name, "namespace": namespace}
    config = yaml.safe_load(service["spec"]["serveConfigV2"])
    config["applications"] = config["applications"][:1]
    service["spec"]["serveConfigV2"] = yaml.safe_dump(config)
    service["spec"].update(spec)
    return service


async def test_a_cluster_change_upgrades_to_a_new_cluster_and_switches_services(localkube):
    async with operator(localkube) as op:
        service = small_service(op.namespace, rayClusterDeletionDelaySeconds=1)
        standin = await standin_for(service)
        try:
            await op.client.create(RAYSERVICE, service)
            ready = await op.wait_condition("svc", "Ready", "True", timeout=90)
            first = ready["status"]["activeServiceStatus"]["rayClusterName"]
            assert ready["metadata"]["finalizers"] == ["ray.io/rayservice-finalizer"]
            assert (
                ready["status"]["activeServiceStatus"]["applicationStatuses"]["fruit_app"]["status"]
                == "RUNNING"
            )
            assert [app["name"] for app in standin.configs[-1]["applications"]] == ["fruit_app"]

            # A serve-config-only change is re-submitted to the same cluster: no new cluster.
            def new_price(obj: dict[str, Any]) -> None:
                obj["spec"]["serveConfigV2"] = obj["spec"]["serveConfigV2"].replace("price: 3", "price: 30")

            submitted = len(standin.configs)
            await replace_spec(op, "svc", new_price)
            await op.wait(lambda: _async(len(standin.configs) > submitted), 30, "the new config submitted")
            prices = [d.get("user_config") for d in standin.configs[-1]["applications"][0]["deployments"]]
            assert {"price": 30} in prices
            assert [c["metadata"]["name"] for c in await op.clusters("svc")] == [first]

            # A cluster change makes a new cluster; Services move once it serves; the old one goes.
            def new_env(obj: dict[str, Any]) -> None:
                set_env(obj, "v2")

            await replace_spec(op, "svc", new_env)
            upgrading = await op.wait_condition("svc", "UpgradeInProgress", "True", timeout=30)
            assert upgrading["status"]["pendingServiceStatus"]["rayClusterName"] != first
            done = await op.wait_condition(
                "svc", "UpgradeInProgress", "False", reason="NoPendingCluster", timeout=90
            )
            second = done["status"]["activeServiceStatus"]["rayClusterName"]
            assert second != first
            for svc in ("svc-head-svc", "svc-serve-svc"):
                selected = await op.get(SERVICE, svc)
                assert selected is not None and selected["spec"]["selector"]["ray.io/cluster"] == second
            await op.wait(lambda: _cluster_names_are(op, "svc", [second]), 60, "the old cluster deleted")
            new_cluster = await op.get(RAYCLUSTER, second)
            assert new_cluster is not None
            head_env = new_cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
            assert {"name": "KUBERAY_ECHO_TAG", "value": "v2"} in head_env
            assert await op.events("DeletedRayCluster")
            [created] = (await op.events("CreatedRayCluster"))[:1]
            assert created["reportingController"] == "rayservice-controller"
            metrics = op.registry.get_sample_value(
                "kuberay_service_condition_ready",
                {
                    "name": "svc",
                    "namespace": op.namespace,
                    "uid": done["metadata"]["uid"],
                    "condition": "true",
                },
            )
            assert metrics == 1

            # Deleting the RayService deletes its clusters, then the finalizer lets it go.
            await op.client.delete(RAYSERVICE, "svc", op.namespace)
            await op.wait(lambda: _gone(op, "svc"), 60, "the RayService gone")
            assert await op.clusters("svc") == []
        finally:
            await standin.stop()


async def test_a_failing_application_keeps_the_service_unready_with_serves_message(localkube):
    async with operator(localkube) as op:
        service = small_service(op.namespace, name="broken")
        message = "ModuleNotFoundError: No module named 'fruit'"
        standin = await standin_for(service, failing={"fruit.deployment_graph": message})
        try:
            await op.client.create(RAYSERVICE, service)
            obj = await op.wait(lambda: _message_has(op, "broken", "Ready", message), 90, "Serve's message")
            ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
            assert (ready["status"], ready["reason"]) == ("False", "Initializing")
            apps = obj["status"]["pendingServiceStatus"]["applicationStatuses"]
            assert apps["fruit_app"]["status"] == "DEPLOY_FAILED"
            assert any(message in e["note"] for e in await op.events("RayServiceNotReady"))
            assert await op.get(SERVICE, "broken-serve-svc") is None
        finally:
            await standin.stop()


async def test_an_invalid_spec_is_reported_and_recovers_once_fixed(localkube):
    async with operator(localkube) as op:
        service = small_service(op.namespace, name="invalid", upgradeStrategy={"type": "Sideways"})
        standin = await standin_for(service)
        try:
            await op.client.create(RAYSERVICE, service)
            failed = await op.wait_condition(
                "invalid", "Ready", "False", reason="ValidationFailed", timeout=30
            )
            ready = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
            assert "Sideways" in ready["message"]
            [event] = await op.events("InvalidRayServiceSpec")
            assert event["type"] == "Warning" and event["note"].startswith(f"{op.namespace}/invalid: ")
            assert await op.clusters("invalid") == []

            def fix(obj: dict[str, Any]) -> None:
                obj["spec"]["upgradeStrategy"] = {"type": "NewCluster"}

            await replace_spec(op, "invalid", fix)
            await op.wait_condition("invalid", "Ready", "True", timeout=90)
        finally:
            await standin.stop()


async def test_suspend_deletes_everything_and_resume_starts_over(localkube):
    async with operator(localkube) as op:
        service = small_service(op.namespace, name="sleepy")
        standin = await standin_for(service)
        try:
            await op.client.create(RAYSERVICE, service)
            await op.wait_condition("sleepy", "Ready", "True", timeout=90)

            def suspend(value: bool) -> Any:
                def change(obj: dict[str, Any]) -> None:
                    obj["spec"]["suspend"] = value

                return change

            await replace_spec(op, "sleepy", suspend(True))
            suspended_obj = await op.wait_condition("sleepy", "Suspended", "True", timeout=60)
            # As upstream's setCondition: each condition of the suspension carries the generation it observed.
            generation = suspended_obj["metadata"]["generation"]
            kinds = ("Ready", "UpgradeInProgress", "RollbackInProgress", "Suspending", "Suspended")
            observed = {c["type"]: c.get("observedGeneration") for c in suspended_obj["status"]["conditions"]}
            assert observed == dict.fromkeys(kinds, generation)
            assert await op.clusters("sleepy") == []
            assert await op.get(SERVICE, "sleepy-serve-svc") is None
            await replace_spec(op, "sleepy", suspend(False))
            resumed = await op.wait_condition("sleepy", "Ready", "True", timeout=90)
            suspended = next(c for c in resumed["status"]["conditions"] if c["type"] == "Suspended")
            assert (suspended["status"], suspended["reason"]) == ("False", "RayServiceResumed")
        finally:
            await standin.stop()


async def test_an_externally_managed_service_is_left_alone(localkube):
    async with operator(localkube) as op:
        service = small_service(op.namespace, name="theirs", managedBy="kueue.x-k8s.io/multikueue")
        await op.client.create(RAYSERVICE, service)
        await asyncio.sleep(2)  # nothing to wait for: the point is that nothing happens
        obj = await op.rayservice("theirs")
        assert obj is not None and not obj["metadata"].get("finalizers") and not obj.get("status")
        assert await op.clusters("theirs") == []


async def _async(value: Any) -> Any:
    return value


async def _gone(op: Operator, name: str) -> bool:
    return await op.rayservice(name) is None


async def _message_has(op: Operator, name: str, kind: str, text: str) -> dict[str, Any] | None:
    """The RayService once its `kind` condition's message contains `text`."""
    obj = await op.rayservice(name)
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c["type"] == kind and text in c.get("message", ""):
            return obj
    return None


async def _active_is(op: Operator, name: str, namespace: str, cluster: str) -> dict[str, Any] | None:
    obj = await op.rayservice(name, namespace)
    active = ((obj or {}).get("status") or {}).get("activeServiceStatus") or {}
    return obj if active.get("rayClusterName") == cluster else None


async def test_an_upgrade_that_cannot_finish_says_why_and_is_abandoned_after_its_timeout(localkube):
    async with operator(localkube, environ={"RAYSERVICE_UPGRADE_TIMEOUT_SECONDS": "8"}) as op:
        service = small_service(op.namespace, name="bounded", rayClusterDeletionDelaySeconds=0)
        standin = await standin_for(service)
        try:
            await op.client.create(RAYSERVICE, service)
            ready = await op.wait_condition("bounded", "Ready", "True", timeout=90)
            first = ready["status"]["activeServiceStatus"]["rayClusterName"]

            def unpullable(obj: dict[str, Any]) -> None:
                head = obj["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]
                head["metadata"]["annotations"]["localkube.io/simulate"] = "ImagePullBackOff"

            await replace_spec(op, "bounded", unpullable)
            stuck = await op.wait(
                lambda: _message_has(op, "bounded", "UpgradeInProgress", "ImagePullBackOff"), 60, "the why"
            )
            pending = stuck["status"]["pendingServiceStatus"]["rayClusterName"]
            assert any("ImagePullBackOff" in e["note"] for e in await op.events("PendingRayClusterNotReady"))

            abandoned = await op.wait(
                lambda: _message_has(op, "bounded", "UpgradeInProgress", "abandoned"), 60, "abandoned"
            )
            upgrade = next(c for c in abandoned["status"]["conditions"] if c["type"] == "UpgradeInProgress")
            assert (upgrade["status"], upgrade["reason"]) == ("False", "NoPendingCluster")
            assert (
                "RAYSERVICE_UPGRADE_TIMEOUT_SECONDS=8" in upgrade["message"]
                and "ImagePullBackOff" in upgrade["message"]
            )
            assert abandoned["status"]["activeServiceStatus"]["rayClusterName"] == first
            assert not abandoned["status"].get("pendingServiceStatus", {}).get("rayClusterName")
            [event] = await op.events("UpgradeTimeout")
            assert pending in event["note"]
            await op.wait(
                lambda: _cluster_names_are(op, "bounded", [first]), 60, "the pending cluster deleted"
            )
            serve = await op.get(SERVICE, "bounded-serve-svc")
            assert serve is not None and serve["spec"]["selector"]["ray.io/cluster"] == first
            still = await op.rayservice("bounded")
            assert still is not None and not still["status"].get("pendingServiceStatus", {}).get(
                "rayClusterName"
            )
            assert next(c for c in still["status"]["conditions"] if c["type"] == "Ready")["status"] == "True"
        finally:
            await standin.stop()


async def _cluster_names_are(op: Operator, service: str, names: list[str]) -> bool:
    return sorted(c["metadata"]["name"] for c in await op.clusters(service)) == sorted(names)


async def test_exclude_head_pod_from_serve_svc_serves_from_the_workers_only(localkube):
    async with operator(localkube) as op:
        service = small_service(op.namespace, name="workers", excludeHeadPodFromServeSvc=True)
        standin = await standin_for(service)
        try:
            await op.client.create(RAYSERVICE, service)
            ready = await op.wait_condition("workers", "Ready", "True", timeout=90)
            cluster = ready["status"]["activeServiceStatus"]["rayClusterName"]
            pods = (await op.client.list(POD, op.namespace, label_selector=f"ray.io/cluster={cluster}")).items
            serve = {
                p["metadata"]["labels"]["ray.io/node-type"]: p["metadata"]["labels"]["ray.io/serve"]
                for p in pods
            }
            assert serve == {"head": "false", "worker": "true"}
            assert ready["status"]["numServeEndpoints"] == 1
        finally:
            await standin.stop()


async def test_the_initializing_timeout_fails_the_service_for_good(localkube):
    async with operator(localkube) as op:
        service = small_service(op.namespace, name="late", rayClusterDeletionDelaySeconds=0)
        service["metadata"]["annotations"] = {"ray.io/initializing-timeout": "5s"}
        standin = await standin_for(service, failing={"fruit.deployment_graph": "ImportError: never"})
        try:
            await op.client.create(RAYSERVICE, service)
            failed = await op.wait_condition(
                "late", "Ready", "False", reason="InitializingTimeout", timeout=90
            )
            ready = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
            assert ready["message"].startswith(
                "RayService failed to become ready within the configured timeout of 5s."
            )
            assert not failed["status"].get("pendingServiceStatus", {}).get("rayClusterName")
            [event] = await op.events("RayServiceInitializingTimeout")
            assert event["type"] == "Warning"
            await op.wait(lambda: _cluster_names_are(op, "late", []), 90, "its cluster deleted")
        finally:
            await standin.stop()
