"""Every Service, Ingress, ServiceAccount, Role, RoleBinding, Secret, PVC, NetworkPolicy, submitter Job and
submitter container built from the upstream samples validates against the official Kubernetes schema of a
recent minor, in strict mode (no unknown fields). (The OpenShift Route has no Kubernetes schema.)"""

import contextlib
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from kuberay.builders import ingress, networkpolicy, pvc, rbac, secret, service, submitter
from support import k8s_schemas
from support.shared import UPSTREAM_SAMPLES, yaml_documents

KINDS = ("RayCluster", "RayJob", "RayService")
GATE_SETS = (FeatureGates(), FeatureGates({Feature.SIDECAR_SUBMITTER_RESTART: True}))
UID = "2c1b7d0e-0000-4000-8000-000000000000"


def samples() -> Iterator[Any]:
    for path in sorted(UPSTREAM_SAMPLES.rglob("*.yaml")):
        for index, doc in enumerate(yaml_documents(path)):
            if isinstance(doc, dict) and doc.get("kind") in KINDS and doc.get("apiVersion") == "ray.io/v1":
                yield pytest.param(doc, id=f"{path.relative_to(UPSTREAM_SAMPLES)}#{index}")


def with_metadata(doc: dict[str, Any], name: str) -> dict[str, Any]:
    metadata = {**doc.get("metadata", {}), "name": name, "namespace": "default", "uid": UID}
    metadata.pop("generateName", None)
    return {**doc, "metadata": metadata}


def cluster_for(owner: dict[str, Any], spec: dict[str, Any], name: str, labels: dict[str, str]) -> RayCluster:
    metadata = {"name": name, "namespace": "default", "uid": UID, "labels": labels}
    metadata["ownerReferences"] = [
        {
            "apiVersion": "ray.io/v1",
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": UID,
            "controller": True,
        }
    ]
    return RayCluster.parse(
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": spec}
    )


def cluster_objects(cluster: RayCluster) -> Iterator[dict[str, Any]]:
    yield service.build_head_service(cluster)
    yield service.build_head_service(cluster, cluster_ip_service=True)
    yield service.build_headless_service(cluster)
    with contextlib.suppress(service.ServiceBuildError):  # no serving port: no serve Service upstream either
        yield service.build_serve_service(cluster)
    yield ingress.build_ingress(cluster)
    yield from rbac.build_autoscaler_rbac(cluster)
    yield secret.build_auth_secret(cluster, "dGVzdC10b2tlbg==")
    yield pvc.build_gcs_pvc(cluster)
    yield from networkpolicy.build_network_policies(cluster)


def built_objects(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    name = doc["metadata"].get("name") or doc["metadata"]["generateName"] + "x7k2p"
    owner = with_metadata(doc, name)
    if doc["kind"] == "RayCluster":
        yield from cluster_objects(RayCluster.parse(owner))
    elif doc["kind"] == "RayService":
        rayservice = RayService.parse(owner)
        cluster = cluster_for(owner, doc["spec"]["rayClusterConfig"], f"{name}-q8vzt", {})
        yield from cluster_objects(cluster)
        yield service.build_head_service_for_owner(rayservice, cluster)
        for gates in GATE_SETS:
            with contextlib.suppress(service.ServiceBuildError):
                yield service.build_rayservice_serve_service(rayservice, cluster, gates)
    else:
        yield from rayjob_objects(owner, name)


def rayjob_objects(owner: dict[str, Any], name: str) -> Iterator[dict[str, Any]]:
    mode = owner["spec"].get("submissionMode", "K8sJobMode")
    spec = owner["spec"].get("rayClusterSpec")
    cluster_name = (owner["spec"].get("clusterSelector") or {}).get("ray.io/cluster") or f"{name}-x7k2p"
    if spec is None:  # an existing cluster, selected: stand in for it
        spec = {
            "headGroupSpec": {
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}
            }
        }
    labels = {
        "ray.io/originated-from-cr-name": name,
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/job-submission-mode": mode,
    }
    cluster = cluster_for(owner, spec, cluster_name, labels)
    owner["status"] = {
        "jobId": f"{name}-abcde",
        "dashboardURL": f"{cluster_name}-head-svc.default.svc.cluster.local:8265",
    }
    job = RayJob.parse(owner)
    yield from cluster_objects(cluster)
    yield service.build_head_service_for_owner(job, cluster)
    for gates in GATE_SETS:
        if mode == "SidecarMode":
            sidecar = submitter.build_submitter_container(job, cluster, gates)
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "head"},
                "spec": {"containers": [sidecar]},
            }
        elif mode == "K8sJobMode":
            yield submitter.build_submitter_job(job, cluster, gates)


def validate(obj: dict[str, Any]) -> None:
    try:
        k8s_schemas.validate(obj)
    except jsonschema.ValidationError as error:
        pytest.fail(f"{obj['kind']} {obj['metadata'].get('name')}: {error.message} at {list(error.path)}")


def test_every_kind_is_sampled() -> None:
    kinds = [param.values[0]["kind"] for param in samples()]
    assert all(kinds.count(kind) >= 10 for kind in KINDS)


def test_strict_validation_rejects_unknown_fields() -> None:
    spec = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}}}
    bad = service.build_head_service(RayCluster.parse({"metadata": {"name": "c"}, "spec": spec}))
    bad["spec"]["bogus"] = True
    with pytest.raises(pytest.fail.Exception, match="bogus"):
        validate(bad)


@pytest.mark.parametrize("doc", list(samples()))
def test_built_objects_validate(doc: dict[str, Any]) -> None:
    objects = list(built_objects(doc))
    assert objects
    for obj in objects:
        validate(obj)
