"""Every pod (and Redis cleanup Job) built from the upstream samples validates against the official
Kubernetes schema of a recent minor, in strict mode (no unknown fields)."""

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.builders import gcsft, pod, rediscleanup
from support import k8s_schemas
from support.shared import UPSTREAM_SAMPLES, yaml_documents

SAMPLES = UPSTREAM_SAMPLES
CREATORS = {"RayCluster": None, "RayJob": "RayJob", "RayService": "RayService"}
# The optional pod features on, so that their containers and volumes are validated too.
OPTIONS = pod.PodOptions(
    feature_gates=FeatureGates({Feature.RAY_CLUSTER_MTLS: True, Feature.RAY_CLUSTER_HISTORY_SERVER: True})
)


def clusters() -> Iterator[Any]:
    for path in sorted(SAMPLES.rglob("*.yaml")):
        for index, doc in enumerate(yaml_documents(path)):
            if not isinstance(doc, dict) or doc.get("kind") not in CREATORS:
                continue
            name = doc["metadata"].get("name") or doc["metadata"]["generateName"] + "x7k2p"
            spec = doc["spec"] if doc["kind"] == "RayCluster" else doc["spec"].get("rayClusterSpec")
            if spec is None:
                continue  # a RayJob that selects an existing cluster
            metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": "2c1b7d0e-uid"}
            metadata["annotations"] = doc["metadata"].get("annotations") or {}
            if doc["kind"] != "RayCluster":
                metadata["name"] = f"{name}-raycluster-abcde"
                metadata["labels"] = {
                    "ray.io/originated-from-crd": doc["kind"],
                    "ray.io/originated-from-cr-name": name,
                }
            cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": spec}
            yield pytest.param(cluster, id=f"{path.relative_to(SAMPLES)}#{index}")


def validate(obj: dict[str, Any]) -> None:
    try:
        k8s_schemas.validate(obj)
    except jsonschema.ValidationError as error:
        pytest.fail(f"{obj['kind']} {obj['metadata']}: {error.message} at {list(error.path)}")


def test_there_are_samples() -> None:
    assert len(list(clusters())) >= 50


@pytest.mark.parametrize("raw", list(clusters()))
def test_built_objects_validate(raw: dict[str, Any]) -> None:
    cluster = RayCluster.parse(raw)
    validate(pod.build_head_pod(cluster, OPTIONS, recreate_hash="hash"))
    for group in cluster.spec.worker_group_specs or ():
        group_pod = pod.build_worker_pod(
            cluster, group, OPTIONS, replica_group_name=f"{group.group_name}-x7k2p"
        )
        validate(group_pod)
    spec, annotations = raw["spec"], raw["metadata"]["annotations"]
    if gcsft.is_enabled(spec, annotations) and not gcsft.is_embedded(spec.get("gcsFaultToleranceOptions")):
        validate(rediscleanup.build_redis_cleanup_job(cluster, OPTIONS))


def test_strict_validation_rejects_unknown_fields() -> None:
    bogus = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {},
        "spec": {"containers": [{"name": "c", "bogus": 1}]},
    }
    with pytest.raises(jsonschema.ValidationError, match="bogus"):
        k8s_schemas.validate(bogus)
