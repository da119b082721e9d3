"""Upstream v1.8's RayClusterSpec fields on the API server and under the operator: `labelMappings` (kuberay#5260,
#5329), `scaleStrategy.scaleGate` (#5094) and `gcsFaultToleranceOptions.activePassiveOptions` (#4910, #5289)
are stored unpruned in every kind that embeds a RayClusterSpec and kept by the operator's reconciles; the CEL
rules of `activePassiveOptions` refuse bad lease timings with the field's path and the reason; and a worker
group whose scaleGate is non-empty gets no new pod while its neighbour scales up.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.webhookserver import make_certificates
from kuberay.local.ports import free_port
from kuberay.rayresources import RAYCLUSTER, RAYCRONJOB, RAYJOB, RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.client import PatchType
from kuberay.runtime.resources import Resource
from support.eventually import eventually
from support.operator_process import ALPHA_GATES, OperatorProcess

from ..runtime.kube import client_for
from .conftest import Kube, service_account_kubeconfig
from .test_lifecycle import WORKER, small_cluster, wait_ready_with

QUOTA_GATE = {"name": "kueue.k8s.io/quota-exceeded"}
LABEL_MAPPINGS = [
    {"nodeLabel": "nvidia.com/gpu.clique", "mapTo": "ray.io/accelerator-domain"},
    {"nodeLabel": "topology.kubernetes.io/zone"},
]
# What the API server stores: the timings not given take the schema's defaults.
ACTIVE_PASSIVE_STORED = {"leaseDurationSeconds": 30, "renewDeadlineSeconds": 10, "retryPeriodSeconds": 2}


@pytest.fixture(scope="module")
def operator(kube_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """As conftest's, with upstream v1.8's two gates on as well, so that specs using the gated fields are
    valid and reconciled (active-passive heads are not implemented: that field is accepted and kept), and
    with its webhook server on, which labelMappings needs (no webhook is registered: no pod here has a
    node's labels delivered)."""
    log_dir = os.environ.get("RAYCLUSTER_TEST_LOG_DIR")
    directory = Path(log_dir) if log_dir else tmp_path_factory.mktemp("operator")
    kubeconfig = service_account_kubeconfig(kube_backend, "kuberay-system", directory / "kubeconfig")
    gates = (
        f"--feature-gates={ALPHA_GATES},TopologyLabelDelivery=true,GCSFaultToleranceActivePassiveHead=true"
    )
    make_certificates(directory / "webhook-certs", ["kuberay-webhook-service.ray-system.svc"])
    webhooks = (f"--webhook-port={free_port()}", f"--webhook-cert-dir={directory / 'webhook-certs'}")
    process = OperatorProcess(
        kubeconfig, directory / "operator.log", gates, *webhooks, env={"ENABLE_WEBHOOKS": "true"}
    ).start()
    try:
        yield process
    finally:
        process.stop()
    assert "forbidden" not in (directory / "operator.log").read_text().lower()


def v1_8_spec(replicas: int = 0) -> dict[str, Any]:
    """small_cluster's spec with every v1.8 field set."""
    spec: dict[str, Any] = small_cluster("x", replicas=replicas)["spec"]
    spec["gcsFaultToleranceOptions"] = {
        "redisAddress": "redis:6379",
        "activePassiveOptions": {"leaseDurationSeconds": 30},
    }
    spec["workerGroupSpecs"][0].update(
        labelMappings=LABEL_MAPPINGS, scaleStrategy={"scaleGate": [QUOTA_GATE]}
    )
    return spec


def assert_v1_8_fields(spec: dict[str, Any]) -> None:
    group = spec["workerGroupSpecs"][0]
    assert group["labelMappings"] == LABEL_MAPPINGS
    assert group["scaleStrategy"] == {"scaleGate": [QUOTA_GATE]}
    assert spec["gcsFaultToleranceOptions"]["activePassiveOptions"] == ACTIVE_PASSIVE_STORED


async def test_a_v1_8_raycluster_round_trips_unpruned_and_the_operator_keeps_it(kube: Kube) -> None:
    manifest = {**small_cluster("v18"), "spec": v1_8_spec()}
    created = await kube.create_cluster(manifest)
    assert_v1_8_fields(created["spec"])
    await wait_ready_with(kube, "v18", 0)

    async def reconciled() -> dict[str, Any] | None:
        cluster = await kube.cluster("v18")
        observed = cluster.get("status", {}).get("observedGeneration")
        return cluster if observed == cluster["metadata"]["generation"] else None

    after = await eventually(reconciled)
    assert after["spec"] == created["spec"]
    assert after["metadata"]["generation"] == created["metadata"]["generation"]


@pytest.mark.parametrize(
    ("resource", "body", "at"),
    [
        (RAYJOB, {"entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True}, ("rayClusterSpec",)),
        (RAYSERVICE, {}, ("rayClusterConfig",)),
        (RAYCRONJOB, {"schedule": "@yearly", "jobTemplate": {"entrypoint": "x"}}, ("jobTemplate", "rayClusterSpec")),
    ],
    ids=["rayjob", "rayservice", "raycronjob"],
)  # fmt: skip
async def test_every_kind_embedding_a_cluster_spec_stores_the_v1_8_fields(
    kube: Kube, resource: Resource, body: dict[str, Any], at: tuple[str, ...]
) -> None:
    spec = copy.deepcopy(body)
    holder = spec
    for key in at[:-1]:
        holder = holder[key]
    holder[at[-1]] = v1_8_spec()
    obj = {"apiVersion": "ray.io/v1", "kind": resource.kind, "metadata": {"name": "v18"}, "spec": spec}
    created = await kube.client.create(resource, obj, kube.namespace)
    try:
        stored = cluster_spec(await kube.client.get(resource, "v18", kube.namespace), at)
        assert stored == cluster_spec(created, at)
        assert_v1_8_fields(stored)
        if resource is RAYJOB:
            # The operator makes the job's RayCluster from that spec, through its models: nothing is lost.
            async def made() -> dict[str, Any] | None:
                found = (await kube.client.list(RAYCLUSTER, kube.namespace)).items
                return found[0] if found else None

            assert_v1_8_fields((await eventually(made))["spec"])
    finally:
        with contextlib.suppress(errors.NotFoundError):
            await kube.client.delete(resource, "v18", kube.namespace)


def cluster_spec(obj: dict[str, Any], at: tuple[str, ...]) -> dict[str, Any]:
    node: dict[str, Any] = obj["spec"]
    for key in at:
        node = node[key]
    return node


@pytest.mark.parametrize(
    ("timings", "reason"),
    [
        ({"leaseDurationSeconds": 10}, "leaseDurationSeconds must be greater than renewDeadlineSeconds"),
        (
            {"leaseDurationSeconds": 20, "renewDeadlineSeconds": 8, "retryPeriodSeconds": 8},
            "renewDeadlineSeconds must be greater than retryPeriodSeconds",
        ),
    ],
)
async def test_the_cel_rules_refuse_bad_lease_timings_naming_the_field(
    kube: Kube, timings: dict[str, int], reason: str
) -> None:
    spec = v1_8_spec()
    spec["gcsFaultToleranceOptions"]["activePassiveOptions"] = timings
    with pytest.raises(errors.Invalid) as refused:
        await kube.create_cluster({**small_cluster("bad-timings"), "spec": spec})
    assert refused_at(str(refused.value), "spec.gcsFaultToleranceOptions.activePassiveOptions", reason)
    # The same rule guards the RayClusterSpec a RayJob embeds, at that spec's path.
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "bad-timings"},
        "spec": {"entrypoint": "x", "rayClusterSpec": spec},
    }
    with pytest.raises(errors.Invalid) as refused:
        await kube.client.create(RAYJOB, job, kube.namespace)
    at = "spec.rayClusterSpec.gcsFaultToleranceOptions.activePassiveOptions"
    assert refused_at(str(refused.value), at, reason)


def refused_at(message: str, path: str, reason: str) -> bool:
    # kube-apiserver 1.37 leaves the value out (`Invalid value: <reason>`); localkube names its type
    # (`Invalid value: "object": <reason>`), as earlier releases did.
    return (
        re.search(rf'{re.escape(path)}: Invalid value: ("object": )?{re.escape(reason)}', message) is not None
    )


async def test_a_gated_worker_group_is_not_scaled_up_while_its_neighbour_is(
    kube: Kube, kube_backend: Any
) -> None:
    manifest = small_cluster("gate", replicas=0)
    open_group = copy.deepcopy(manifest["spec"]["workerGroupSpecs"][0])
    gated = {**copy.deepcopy(open_group), "groupName": "gated", "scaleStrategy": {"scaleGate": [QUOTA_GATE]}}
    # The gated group comes first: a pass that makes the open group's pods has already passed over it.
    manifest["spec"]["workerGroupSpecs"] = [gated, {**open_group, "groupName": "open"}]
    await kube.create_cluster(manifest)
    await wait_ready_with(kube, "gate", 0)

    # Kueue's writes come from a controller of its own, under its own field manager.
    kueue = client_for(kube_backend, field_manager="kueue")
    scale_both = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2},
        {"op": "replace", "path": "/spec/workerGroupSpecs/1/replicas", "value": 2},
    ]
    patched = await kube.client.patch(
        RAYCLUSTER, "gate", scale_both, kube.namespace, patch_type=PatchType.JSON
    )

    async def open_scaled_and_observed() -> bool:
        cluster = await kube.cluster("gate")
        observed = cluster.get("status", {}).get("observedGeneration")
        return observed == patched["metadata"]["generation"] and (
            len(await kube.live_pods("gate", **{**WORKER, "ray.io/group": "open"})) == 2
        )

    await eventually(open_scaled_and_observed)
    assert await kube.live_pods("gate", **{**WORKER, "ray.io/group": "gated"}) == []
    cluster = await kube.cluster("gate")
    assert cluster["spec"]["workerGroupSpecs"][0]["scaleStrategy"] == {"scaleGate": [QUOTA_GATE]}

    # Once Kueue takes its gate away, the group gets its pods.
    try:
        ungate = [{"op": "remove", "path": "/spec/workerGroupSpecs/0/scaleStrategy/scaleGate"}]
        await kueue.patch(RAYCLUSTER, "gate", ungate, kube.namespace, patch_type=PatchType.JSON)
    finally:
        await kueue.close()
    assert len(await wait_ready_with(kube, "gate", 4)) == 4
    assert len(await kube.live_pods("gate", **{**WORKER, "ray.io/group": "gated"})) == 2
