"""labelMappings' validation (kuberay#5300): the validating webhooks' rules (an allowed node label, one mapping
per Ray key, KubeRay's own `ray start`) for RayClusters and the clusters of RayJobs and RayServices, and the
reconciler's Ray 2.45.0 floor (`--labels-file`)."""

from __future__ import annotations

import copy
from typing import Any

from kuberay.api.features import FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.validation import (
    validate_raycluster,
    validate_raycluster_admission,
    validate_rayjob_admission,
    validate_rayservice_admission,
)

ALLOWED = ["example.com/rack", "topology.kubernetes.io/zone"]
GATES = FeatureGates.parse("TopologyLabelDelivery=true")


def spec(*mappings: dict[str, str], ray_version: str = "2.49.0", **template: Any) -> dict[str, Any]:
    container = {"name": "ray-worker", "image": "rayproject/ray"}
    worker = {
        "groupName": "train", "replicas": 1, "minReplicas": 1, "maxReplicas": 1, "rayStartParams": {},
        "labelMappings": list(mappings), "template": {"spec": {"containers": [container]}, **template},
    }  # fmt: skip
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [{**container, "name": "ray-head"}]}}}
    return {"rayVersion": ray_version, "headGroupSpec": head, "workerGroupSpecs": [worker]}


def cluster(cluster_spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "topo", "namespace": "ns", **({"annotations": annotations} if annotations else {})}  # fmt: skip
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": cluster_spec}


def errors(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in validate_raycluster_admission(obj, ALLOWED)]


RACK = {"nodeLabel": "example.com/rack", "mapTo": "rack"}


def test_allowed_and_distinct_mappings_pass() -> None:
    assert errors(cluster(spec(RACK, {"nodeLabel": "topology.kubernetes.io/zone"}))) == []


def test_a_node_label_outside_the_allowlist() -> None:
    assert errors(cluster(spec(RACK, {"nodeLabel": "secret.example.com/x"}))) == [
        (
            "spec.workerGroupSpecs[0].labelMappings[1].nodeLabel",
            "node label secret.example.com/x is not in the operator's allowedNodeLabels",
        )
    ]


def test_two_mappings_to_one_ray_key() -> None:
    assert errors(cluster(spec(RACK, {"nodeLabel": "topology.kubernetes.io/zone", "mapTo": "rack"}))) == [
        (
            "spec.workerGroupSpecs[0].labelMappings[1]",
            "Ray label rack is delivered by more than one labelMapping",
        )
    ]


def test_kuberay_must_generate_ray_start() -> None:
    overwritten = cluster(spec(RACK), {"ray.io/overwrite-container-cmd": "true"})
    assert [path for path, _ in errors(overwritten)] == [
        "metadata.annotations[ray.io/overwrite-container-cmd]"
    ]
    in_template = cluster(spec(RACK, metadata={"annotations": {"ray.io/overwrite-container-cmd": "true"}}))
    assert [path for path, _ in errors(in_template)] == [
        "spec.workerGroupSpecs[0].template.metadata.annotations[ray.io/overwrite-container-cmd]"
    ]
    own_start = cluster(spec(RACK))
    own_start["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["command"] = ["ray", "start", "--block"]  # fmt: skip
    assert errors(own_start) == [
        (
            "spec.workerGroupSpecs[0].template.spec.containers[0].command",
            "the Ray container cannot run ray start itself with labelMappings: KubeRay generates it",
        )
    ]
    # Groups without labelMappings may do either.
    plain = copy.deepcopy(own_start)
    del plain["spec"]["workerGroupSpecs"][0]["labelMappings"]
    assert errors(plain) == []


def test_rayjob_and_rayservice_clusters_at_their_paths() -> None:
    bad = spec({"nodeLabel": "secret.example.com/x"})
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"}, "spec": {"entrypoint": "x", "rayClusterSpec": bad}}  # fmt: skip
    service = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "s"}, "spec": {"rayClusterConfig": bad}}  # fmt: skip
    assert [e.path for e in validate_rayjob_admission(job, ALLOWED)] == [
        "spec.rayClusterSpec.workerGroupSpecs[0].labelMappings[0].nodeLabel"
    ]
    assert [e.path for e in validate_rayservice_admission(service, ALLOWED)] == [
        "spec.rayClusterConfig.workerGroupSpecs[0].labelMappings[0].nodeLabel"
    ]


def test_the_reconciler_needs_ray_2_45_for_the_labels_file() -> None:
    old = RayCluster.parse(cluster(spec(RACK, ray_version="2.44.1")))
    assert [(e.path, e.message) for e in validate_raycluster(old, GATES)] == [
        ("spec.rayVersion", "labelMappings is set but minimum Ray version is 2.45.0, got 2.44.1")
    ]
    assert validate_raycluster(RayCluster.parse(cluster(spec(RACK))), GATES) == []
